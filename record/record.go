// Package record is tokbench's result schema: one Record per measured
// test, the statuses, the JSONL files records live in (appended and
// fsynced as they are measured, read back with a torn last line ignored)
// and the import of llama-bench's JSON output.
//
// A Record is written by the measuring executor (package measure, for
// run and for sweep's worker processes) and read by everything downstream
// (roofline, baseline, report). Its Go form is nested by subject; its JSON
// is flat, with llama-bench's field names where they mean the same, so
// that existing tooling reads it.
package record

import (
	"fmt"
	"time"

	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/roofline"
	"github.com/tokbench/tokbench/stats"
)

// Record is the result of one test (pp or tg) of one point. The embedded
// parts marshal flat.
type Record struct {
	Key     point.Key `json:"key"`      // the point's identity (resume matches on it)
	ModelID string    `json:"model_id"` // the model as the sweep named it
	Test    string    `json:"test"`     // pp512, tg128@d1024, ...
	Status  Status    `json:"status"`
	Reason  string    `json:"reason,omitempty"`
	// Round is the round of an interleaved sweep (sweep --rounds) the
	// record measured, 1 to Rounds; the record that merges a point's
	// rounds has Round 0 and Rounds set.
	Round  int     `json:"round,omitempty"`
	Rounds int     `json:"rounds,omitempty"`
	Phases *Phases `json:"phases_ms,omitempty"`
	// SpecSHA256 is the sweep's spec (sweep.Spec.Hash), and Shard the
	// share of its points this record's run measured ("I/N", sweep
	// --shard): tokbench merge joins a fleet's files with them.
	SpecSHA256 string `json:"spec_sha256,omitempty"`
	Shard      string `json:"shard,omitempty"`

	Build
	Machine
	Model
	Settings
	Result
	Hardware

	Roofline *roofline.Analysis `json:"roofline,omitempty"`
	// Kernels are the test's step's ops timed alone at its shapes (the
	// decomposition's kernel time); KernelsNote says why they are
	// missing when they could not be timed.
	Kernels     []roofline.KernelTime `json:"kernels,omitempty"`
	KernelsNote string                `json:"kernels_note,omitempty"`
	// OutsideMs is the time per step outside the graph's nodes (graph
	// build, inputs, outputs), measured on a few observed steps.
	OutsideMs float64 `json:"outside_nodes_ms,omitempty"`
	// Extra is what a llama-bench row carried that tokbench has no field
	// for (Extra).
	Extra Extra `json:"llama_bench_extra,omitempty"`
}

// Build is the software that measured.
type Build struct {
	BuildCommit   string `json:"build_commit"` // upstream llama.cpp
	BuildNumber   int    `json:"build_number"`
	OllamaVersion string `json:"ollama_version"` // whose patched copy of llama.cpp it is
	Tool          string `json:"tool"`           // "tokbench <version>"
}

// Machine is where it was measured.
type Machine struct {
	CPUInfo     string    `json:"cpu_info"`
	GPUInfo     string    `json:"gpu_info"`
	Backends    string    `json:"backends"`
	Backend     string    `json:"backend"`     // the one doing the work
	DeviceList  []string  `json:"device_list"` // every device the build sees, described
	CPUFeatures string    `json:"cpu_features"`
	HostThreads int       `json:"host_threads"`
	HostMemory  uint64    `json:"host_memory"`
	HostName    string    `json:"host_name,omitempty"`
	GPUProfile  []gpu.GPU `json:"gpu_profile,omitempty"`
}

// Model is what was measured: the file and what a step of it moves and
// computes (from its real tensor sizes and the KV types), for the
// roofline.
type Model struct {
	ModelFile        string `json:"model_filename"`
	ModelType        string `json:"model_type"`
	ModelSize        uint64 `json:"model_size"`
	ModelParams      uint64 `json:"model_n_params"`
	ModelFileType    string `json:"model_file_type"`
	ModelFileSize    int64  `json:"model_file_size"`
	ModelSHA256      string `json:"model_sha256,omitempty"` // the file's content: its identity in baselines
	WeightsStepBytes int64  `json:"weights_step_bytes,omitempty"`
	KVBytesPerToken  int64  `json:"kv_bytes_per_token,omitempty"`
	FlopParams       int64  `json:"flop_params,omitempty"`
	ModelNLayer      int    `json:"model_n_layer,omitempty"`
	ModelNEmbd       int    `json:"model_n_embd,omitempty"`
	// Experts is a mixture of experts' routing and placement (nil:
	// dense). WeightsStepBytes is then what a step reads besides them.
	Experts *Experts `json:"experts,omitempty"`
}

// Settings are how it was measured.
type Settings struct {
	point.Shape        // as used (llama-bench's records: as given)
	SplitMode   string `json:"split_mode"`
	MainGPU     int    `json:"main_gpu"`
	// FlashAttn is flash attention as the test ran it, on or off (-1,
	// auto: not known, as in files of before FlashAttnType); in JSON the
	// pinned llama-bench's bool. FlashAttnType is "auto" where it was left
	// to llama.cpp (-fa auto, which that llama-bench lacks): FlashAttn is
	// then what llama.cpp chose. FlashAttnSetting is the setting.
	FlashAttn     point.FlashAttn `json:"flash_attn"`
	FlashAttnType string          `json:"flash_attn_type,omitempty"`
	UseMmap       bool            `json:"use_mmap"`
	NPrompt       int             `json:"n_prompt"`
	NGen          int             `json:"n_gen"`
	NDepth        int             `json:"n_depth"`
	NCtx          int             `json:"n_ctx"`
	NParallel     int             `json:"n_parallel"`
	Sampling      string          `json:"sampling"` // "none" or the chain
	Reps          int             `json:"repetitions"`
	Warmup        bool            `json:"warmup"`
	// llama-bench's placement and threading knobs, in its spellings
	// (cpu_mask 0x0, tensor_split 0.00, tensor_buft_overrides none when
	// unset); DeviceSelect is -dev ("" every device).
	NCPUMoE         int    `json:"n_cpu_moe"`
	TensorSplit     string `json:"tensor_split"`
	TensorOverrides string `json:"tensor_buft_overrides"`
	DeviceSelect    string `json:"device_select,omitempty"`
	// Devices is llama-bench's devices: the -dev selection, "auto" for
	// all of them.
	Devices     DeviceNames `json:"devices"`
	NoKVOffload bool        `json:"no_kv_offload"`
	CPUMask     string      `json:"cpu_mask"`
	CPUStrict   bool        `json:"cpu_strict"`
	Poll        int         `json:"poll"` // -1: no thread pool (--poll none)
	Prio        int         `json:"prio,omitempty"`
	// llama-bench's settings that tokbench keeps off, written as it
	// writes them off, so that its tools read every record.
	Embeddings bool `json:"embeddings"`
	point.Switches
}

// FlashAttnSetting is flash attention as it was set: auto where it was
// left to llama.cpp, else on or off.
func (s *Settings) FlashAttnSetting() point.FlashAttn {
	if s.FlashAttnType == "auto" {
		return point.FlashAuto
	}
	return s.FlashAttn
}

// Result is what the repetitions gave: llama-bench's figures, then ours.
type Result struct {
	TestTime  time.Time `json:"test_time"`
	AvgNs     uint64    `json:"avg_ns"`
	StddevNs  uint64    `json:"stddev_ns"`
	AvgTs     float64   `json:"avg_ts"`
	StddevTs  float64   `json:"stddev_ts"`
	SamplesNs []uint64  `json:"samples_ns"`
	SamplesTs []float64 `json:"samples_ts"`
	// SamplesRound is the round each sample was measured in (merged
	// records of an interleaved sweep).
	SamplesRound []int   `json:"samples_round,omitempty"`
	MedianTs     float64 `json:"median_ts"`
	MinTs        float64 `json:"min_ts"`
	MaxTs        float64 `json:"max_ts"`
	// CI95Ts is the half-width of the 95% interval around the mean that
	// a rerun's mean (another process, same settings, same machine)
	// falls in: the repetitions' own interval (CI95RepsTs, Student's t)
	// and the spread between processes (ProcessCV, a fraction of the
	// mean, estimated as CIBasis says), both for this run and the
	// rerun. Two runs whose means differ by more differ in fact.
	CI95Ts      float64 `json:"ci95_ts"`
	CI95RepsTs  float64 `json:"ci95_reps_ts"`
	ProcessCV   float64 `json:"process_cv"`
	CIBasis     string  `json:"ci_basis,omitempty"`
	CV          float64 `json:"cv"`
	AvgTsPerSeq float64 `json:"avg_ts_per_seq"`
	// With adaptive repetitions (-r auto): the 95% CI half-width of the
	// mean t/s aimed at, as a fraction of the mean, and whether the
	// repetitions reached it before the limit on their count or time.
	CITarget    float64        `json:"ci_target,omitempty"`
	CITargetMet *bool          `json:"ci_target_met,omitempty"`
	TTFT        *stats.Latency `json:"ttft_ms,omitempty"`
	ITL         *stats.Latency `json:"itl_ms,omitempty"`
	// SamplingCostPct is how much slower the sampled tg test was than the
	// same test with random tokens (percent of raw t/s).
	SamplingCostPct *float64 `json:"sampling_cost_pct,omitempty"`
	// DriftPct is the decode rate of the last quarter of the steps against
	// the first quarter's, in percent; negative is a slowdown.
	DriftPct *float64 `json:"drift_pct,omitempty"`
}

// Hardware is what the GPUs and the host did during the test.
type Hardware struct {
	Telemetry  *Telemetry `json:"telemetry,omitempty"`
	EnergyJ    *float64   `json:"energy_j,omitempty"`     // GPU energy of the timed repetitions
	TokensPerJ *float64   `json:"tokens_per_j,omitempty"` // tokens generated (or prefilled) per joule
	Throttled  bool       `json:"throttled,omitempty"`    // power or thermal clock limits seen while measuring
	// Noise is what else the machine did while the test was measured
	// (other processes, steal, CPU clocks), its outlying repetitions, and
	// whether the figures can be vouched for.
	Noise *host.Noise `json:"noise,omitempty"`
}

// Status says whether a record holds a measurement.
type Status string

// Record statuses.
const (
	StatusOK      Status = "ok"
	StatusSkipped Status = "skipped" // could not fit: not attempted
	StatusFailed  Status = "failed"
)

// Phases is where a point's wall time went, in milliseconds: loading the
// model and context (charged to the first point that needed them), the
// warm-up, filling or trimming the KV cache to the point's depth, and the
// timed repetitions.
type Phases struct {
	LoadMs    float64 `json:"load"`
	WarmupMs  float64 `json:"warmup"`
	DepthMs   float64 `json:"depth"`
	MeasureMs float64 `json:"measure"`
	KernelsMs float64 `json:"kernels,omitempty"` // timing the step's ops alone
}

// Add adds another point's phases.
func (p *Phases) Add(o Phases) {
	p.LoadMs += o.LoadMs
	p.WarmupMs += o.WarmupMs
	p.DepthMs += o.DepthMs
	p.MeasureMs += o.MeasureMs
	p.KernelsMs += o.KernelsMs
}

// Telemetry holds one window per phase of a point: warm-up and depth fill
// (when the point did them), the timed repetitions together, and each
// repetition.
type Telemetry struct {
	Warmup  *gpu.Window  `json:"warmup,omitempty"`
	Depth   *gpu.Window  `json:"depth,omitempty"`
	Measure *gpu.Window  `json:"measure"`
	Reps    []gpu.Window `json:"reps"`
}

// IsPrompt reports whether the record is a pp (prefill) test.
func (r *Record) IsPrompt() bool { return r.NGen == 0 }

// IsCombined reports whether the record is a pp+tg test (-pg): prefill
// and decode timed together, with no roofline of its own.
func (r *Record) IsCombined() bool { return r.NPrompt > 0 && r.NGen > 0 }

// OK says whether the record holds a measurement.
func (r *Record) OK() bool { return r.Status == StatusOK }

// Name is the model as the sweep named it, else the file.
func (r *Record) Name() string {
	if r.ModelID != "" {
		return r.ModelID
	}
	return r.ModelFile
}

// Encode is r as it can be written and its line, encoded once: a record
// holding a figure JSON cannot (an infinity or NaN, from a cached figure
// out of range) is a failed test saying so, its figures dropped, never a
// record silently lost. A Writer writes the line as it is.
func Encode(r Record) (Record, Line) {
	b, err := r.MarshalJSON()
	if err == nil {
		return r, append(b, '\n')
	}
	w := Record{Key: r.Key, ModelID: r.ModelID, Test: r.Test, Round: r.Round, Rounds: r.Rounds, SpecSHA256: r.SpecSHA256, Shard: r.Shard,
		Build: r.Build, Machine: r.Machine, Model: r.Model, Settings: r.Settings, Status: StatusFailed,
		Reason: fmt.Sprintf("its figures cannot be written (%v): a figure out of range, most likely from a cache (run tokbench probe again; remove the cache's kernels/ folder)", err)}
	if b, err = w.MarshalJSON(); err != nil {
		w = Record{Key: r.Key, ModelID: r.ModelID, Test: r.Test, Status: StatusFailed, Reason: w.Reason}
		b, _ = w.MarshalJSON()
	}
	return w, append(b, '\n')
}
