package measure

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tokbench/tokbench/engine"
	"github.com/tokbench/tokbench/gpu"
	"github.com/tokbench/tokbench/host"
	"github.com/tokbench/tokbench/internal/plan"
	"github.com/tokbench/tokbench/internal/safefile"
	"github.com/tokbench/tokbench/point"
	"github.com/tokbench/tokbench/roofline"
)

// kernelBudget bounds the weights one op's graph allocates. An op whose
// Count instances would take more is timed on fewer (never fewer than
// this many bytes, far past any CPU's last-level cache, so they stream
// from memory as in the step) and the time scaled up.
const kernelBudget = 256 << 20

// kernelTimer times a step's ops alone on one device, each op once per
// build, device, thread count and shape: the results are kept in Dir (the
// cache folder; "" for none), so that a sweep's depths re-time only
// attention.
type kernelTimer struct {
	Dir     string
	Class   string // the hardware class
	Build   string // what ran the kernels: a new llama.cpp or CPU build times them again
	Device  gpu.Device
	Threads int
	// Stop, if set, ends the timing between two ops (Ctrl-C, a sweep's
	// graceful stop).
	Stop func() bool
}

// opBudget bounds the timed runs of one op after its warm-up: a large
// prefill's products take seconds each.
const opBudget = 5 * time.Second

// maxOpMs is the most a cached op's time per step may be (a thousand
// seconds): past it the cache is damaged.
const maxOpMs = 1e6

// errKernelsStopped is a timing stopped before its last op.
var errKernelsStopped = errors.New("stopped before every op was timed")

// Time returns each op's milliseconds per step.
func (kt kernelTimer) Time(ops []roofline.Op) ([]roofline.KernelTime, error) {
	defer engine.KeepFreedMemory()()
	out := make([]roofline.KernelTime, 0, len(ops))
	for _, op := range ops {
		if kt.Stop != nil && kt.Stop() {
			return nil, errKernelsStopped
		}
		ms, err := kt.one(op)
		if err != nil {
			return nil, err
		}
		out = append(out, roofline.KernelTime{Op: op, Ms: ms})
	}
	return out, nil
}

func (kt kernelTimer) one(op roofline.Op) (float64, error) {
	key, _ := json.Marshal(struct {
		Op      roofline.Op
		Build   string
		Device  string
		Threads int
	}{op, kt.Build, kt.Device.Description, kt.Threads})
	sum := sha256.Sum256(key)
	path := filepath.Join(kt.Dir, "kernels", kt.Class, hex.EncodeToString(sum[:12])+".json")
	var ms float64
	if kt.Dir != "" {
		// A cached time out of range (hand-edited, damaged) is timed again.
		if b, err := os.ReadFile(path); err == nil && json.Unmarshal(b, &ms) == nil && ms > 0 && ms <= maxOpMs {
			return ms, nil
		}
	}
	// A matrix larger than the budget (a large vocabulary's output
	// projection) is timed on a slice of its rows and scaled.
	run, scale := op, 1.0
	if w := weightBytes(op); op.Kind == roofline.OpMatMul && w > kernelBudget {
		if rows := max(256, op.B*kernelBudget/w/256*256); rows < op.B {
			run.B, scale = rows, float64(op.B)/float64(rows)
		}
	}
	copies := op.Count
	if w := weightBytes(run); w > 0 {
		copies = min(op.Count, max(1, int(kernelBudget/w)))
	}
	// A product over many tokens on a CPU computes from weights in its
	// caches (each weight, or cached K and V, serves every token): its
	// time per instance does not depend on how many instances there are,
	// so as many as make computeBudget FLOPs are timed, not all of them
	// (whose fill and runs cost a prefill test several times its
	// measuring).
	if kt.Device.Type == "cpu" && computes(op.Kind) && op.N >= computeTokens {
		if f := perInstanceFlops(run); f > 0 {
			copies = min(copies, max(1, int(math.Ceil(computeBudget/f))))
		}
	}
	// An op on activations alone (a norm, an add) costs the same per
	// instance however many there are; those of a prefill are large, and
	// as many as make activationBudget bytes are timed (a decode's are a
	// few KiB: all of them, which spreads the graph's own overhead).
	if kt.Device.Type == "cpu" && weightBytes(run) == 0 {
		if b, _ := perInstance(run); b > 0 {
			copies = min(copies, max(1, int(math.Ceil(activationBudget/b))))
		}
	}
	// Decode ops take microseconds: more runs for a steady median.
	iters := 9
	if op.Flops > 5e10 {
		iters = 3
	}
	before := host.ReadCPUCounters("/", "self")
	s, err := engine.TimeOps(kt.Device.Index, kt.Threads, []engine.OpCopies{{Op: run, Copies: copies}}, iters, opBudget)
	if err != nil {
		return 0, err
	}
	ms = 1000 * s * scale * float64(op.Count) / float64(copies)
	// A timing taken while other processes ran is used once, not kept:
	// kept, it would stand for this op on this machine from then on.
	busy := host.NoiseBetween(before, host.ReadCPUCounters("/", "self")).OtherCPUPct > host.MaxOtherCPUPct
	if kt.Dir != "" && !busy && os.MkdirAll(filepath.Dir(path), 0o755) == nil {
		b, _ := json.Marshal(ms)
		safefile.Write(path, b, 0o644)
	}
	return ms, nil
}

// A CPU product over computeTokens tokens or more is compute-bound: timed
// on instances of computeBudget FLOPs in all (a millisecond or a few). An op
// on activations alone is timed on instances of activationBudget bytes.
const (
	computeTokens    = 16
	computeBudget    = 2.5e8
	activationBudget = 16 << 20
)

// computes says whether an op's cost is in products (matrix products,
// attention), which a prefill's many tokens make compute-bound.
func computes(k roofline.OpKind) bool {
	return k == roofline.OpMatMul || k == roofline.OpMatMulID || k == roofline.OpAttn || k == roofline.OpFlash
}

// perInstance is one instance's bytes and FLOPs of an op.
func perInstance(op roofline.Op) (bytes, flops float64) {
	op.Count = 1
	return op.Cost()
}

func perInstanceFlops(op roofline.Op) float64 {
	_, f := perInstance(op)
	return f
}

// weightBytes is what one instance of an op allocates that scales with
// the model (its weight matrix or caches); 0 for activations only.
func weightBytes(op roofline.Op) int64 {
	one := op
	one.Count = 1
	b, _ := one.Cost()
	switch op.Kind {
	case roofline.OpMatMul, roofline.OpGetRows, roofline.OpAttn, roofline.OpFlash:
		return int64(b)
	}
	return 0
}

// ForgetKernels removes the kernel timings cached for a hardware class:
// a step whose kernels, timed alone, took far longer than the whole step
// proves some of them were timed while the machine was busy, and the next
// run times them again.
func ForgetKernels(dir, class string) error {
	if dir == "" || class == "" || strings.ContainsAny(class, `/\`) || class == "." || class == ".." {
		return nil
	}
	return os.RemoveAll(filepath.Join(dir, "kernels", class))
}

// kernelsFor times the ops of p's step on the device that ran it (with
// experts distinct experts per layer for a mixture, last in a prefill's
// last layer), until stop says to stop.
func (e *Executor) kernelsFor(p point.Point, flash bool, experts, last float64, stop func() bool) ([]roofline.KernelTime, error) {
	f := e.model.File
	if f.H.NHead == 0 || f.H.NFF == 0 {
		return nil, fmt.Errorf("the model's head count or feed-forward length is per layer: its step cannot be laid out")
	}
	dev, ok := e.Env.WorkingDevice(p)
	if !ok {
		return nil, fmt.Errorf("no device to time the kernels on")
	}
	tokens, ctx, outputs, _ := plan.Step(p)
	ops := roofline.StepOps(f.StepShape(p.TypeK, p.TypeV, flash, experts, last), tokens, ctx, outputs)
	kt := kernelTimer{Dir: e.Env.CacheDir, Class: e.Env.Device(p).Class, Build: e.Env.Build(), Device: dev, Threads: p.Threads, Stop: stop}
	return kt.Time(ops)
}
