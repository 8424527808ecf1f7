package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tokbench/tokbench/record"
)

// The GPU code path on a software Vulkan device: ggml's Vulkan backend on
// mesa's llvmpipe. TOKBENCH_TEST_VULKAN names the folder holding
// libggml-base.so and libggml-vulkan.so (BACKEND=vulkan
// scripts/build-backend.sh DIR; .ci/run builds it). llvmpipe's numbers
// test the path, not hardware.

// vulkanDir is the backend folder, or skips the test.
func vulkanDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TOKBENCH_TEST_VULKAN")
	if dir == "" {
		t.Skip("TOKBENCH_TEST_VULKAN is not set: build the Vulkan backend (BACKEND=vulkan scripts/build-backend.sh DIR, with glslc, libvulkan-dev and mesa-vulkan-drivers) and set it to DIR; .ci/run does")
	}
	if _, err := os.Stat(filepath.Join(dir, "libggml-vulkan.so")); err != nil {
		t.Fatalf("TOKBENCH_TEST_VULKAN=%s: %v", dir, err)
	}
	return dir
}

// vk runs tokbench with the Vulkan backend loaded and llvmpipe visible
// (ggml hides CPU-type Vulkan devices unless GGML_VK_VISIBLE_DEVICES names
// them), with its own cache folder (probes are per class).
func vk(t *testing.T, cache string, args ...string) result {
	t.Helper()
	r := tokbenchEnv(t, []string{"GGML_VK_VISIBLE_DEVICES=0", "TOKBENCH_CACHE=" + cache}, append([]string{"--backend-dir", vulkanDir(t)}, args...)...)
	if r.code == 134 {
		t.Fatalf("tokbench %v aborted:\n%s", args, r.stderr)
	}
	return r
}

type vkRecord struct {
	Test       string  `json:"test"`
	Backend    string  `json:"backend"`
	GPUInfo    string  `json:"gpu_info"`
	NGPULayers int     `json:"n_gpu_layers"`
	AvgTs      float64 `json:"avg_ts"`
	Roofline   *struct {
		Verdict   string  `json:"verdict"`
		CeilingTs float64 `json:"ceiling_ts"`
	} `json:"roofline"`
}

func vkRecords(t *testing.T, r result) []vkRecord {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var recs []vkRecord
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil || len(recs) == 0 {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	return recs
}

func TestVulkanDevicesAndOffload(t *testing.T) {
	cache := t.TempDir()
	r := vk(t, cache, "devices", "-o", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"Vulkan"`) || !strings.Contains(r.stdout, "llvmpipe") {
		t.Fatalf("devices: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	model := tinyModel(t)
	// No layers, one, all (the tiny model has 2 blocks and the output);
	// records hold what was given, as llama-bench's do.
	for _, c := range []struct {
		ngl, layers int
		backend     string
	}{{0, 0, "CPU"}, {1, 1, "Vulkan"}, {-1, -1, "Vulkan"}} {
		recs := vkRecords(t, vk(t, cache, "run", "-m", model, "-ngl", strconv.Itoa(c.ngl), "-p", "32", "-n", "8", "-r", "2", "--no-kernels", "-o", "json"))
		for _, rec := range recs {
			if rec.NGPULayers != c.layers || rec.Backend != c.backend || rec.AvgTs <= 0 || (c.layers != 0 && !strings.Contains(rec.GPUInfo, "llvmpipe")) {
				t.Errorf("-ngl %d: %s on %s (%s) with %d layers, %.1f t/s; want %s with %d", c.ngl, rec.Test, rec.Backend, rec.GPUInfo, rec.NGPULayers, rec.AvgTs, c.backend, c.layers)
			}
		}
	}
}

// The memory check weighs an offloaded point against the device's memory
// (llvmpipe's 2 GiB heap), not the host's, and says so with the numbers.
func TestVulkanMemoryCheck(t *testing.T) {
	r := vk(t, filepath.Join(workDir, "cache"), "run", "--synth", "llama-1b", "--synth-type", "q4_0", "-ngl", "-1", "-d", "65536", "-p", "0", "-n", "8")
	if r.code != 2 || !strings.Contains(r.stderr, "but the GPUs have 2.00 GiB free") {
		t.Errorf("a point past the device's memory: exit %d %s", r.code, r.stderr)
	}
}

// Probe the device, then a run's roofline is set against its ceilings.
func TestVulkanProbeAndRoofline(t *testing.T) {
	cache := t.TempDir()
	r := vk(t, cache, "probe", "--device", "1", "-r", "1", "--types", "q4_0")
	if r.code != 0 || !strings.Contains(r.stdout+r.stderr, "vulkan-llvmpipe") {
		t.Fatalf("probe: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, rec := range vkRecords(t, vk(t, cache, "run", "-m", tinyModel(t), "-ngl", "-1", "-p", "32", "-n", "8", "-r", "2", "--no-kernels", "-o", "json")) {
		if rec.Roofline == nil || rec.Roofline.CeilingTs <= 0 || rec.Roofline.Verdict == "no ceiling" {
			t.Errorf("%s: roofline %+v, want one against the probed device", rec.Test, rec.Roofline)
		}
	}
}

func TestVulkanSweepAndLoad(t *testing.T) {
	cache := t.TempDir()
	out := filepath.Join(t.TempDir(), "s.jsonl")
	r := vk(t, cache, "sweep", "-m", tinyModel(t), "-ngl", "0,1,-1", "-p", "32", "-n", "8", "-r", "2", "--no-kernels", "--out", out)
	if r.code != 0 {
		t.Fatalf("sweep: %s", r.stderr)
	}
	data, _ := os.ReadFile(out)
	layers := map[int]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec vkRecord
		json.Unmarshal([]byte(line), &rec)
		layers[rec.NGPULayers]++
		if (rec.NGPULayers != 0) != (rec.Backend == "Vulkan") {
			t.Errorf("%d layers on %s", rec.NGPULayers, rec.Backend)
		}
	}
	if layers[0] != 2 || layers[1] != 2 || layers[-1] != 2 {
		t.Errorf("records by offloaded layers %v, want 2 each of 0, 1 and -1 (as given)", layers)
	}
	res := loadJSON(t, vk(t, cache, "load", "-m", tinyModel(t), "-ngl", "-1", "--workload", "short", "--concurrency", "2", "--requests", "4", "-o", "json"))
	if s := res.Scenarios[0].Summary; s.Completed != 4 || s.OutputTs <= 0 {
		t.Errorf("load with offload: %+v", s)
	}
}

// A backend library that will not load is a clear error, never an abort;
// so is a backend folder named without one.
func TestVulkanBadBackend(t *testing.T) {
	vulkanDir(t)
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, "libggml-vulkan.so"), bytes.Repeat([]byte("not an ELF file "), 4096), 0o755)
	empty := t.TempDir()
	for dir, want := range map[string]string{bad: "libggml-vulkan.so did not load", empty: "no GPU backend library"} {
		cmd := exec.Command(binPath, "--backend-dir", dir, "devices")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(errb.String(), want) {
			t.Errorf("--backend-dir %s: %v %s; want exit 1 and %q", dir, err, errb.String(), want)
		}
	}
}

// llama-bench's placement knobs on a GPU device: -dev names it, -ot keeps
// tensors on the CPU (llama.cpp logs each one) while the rest go to the
// device, -ts and -nkvo pass, and an unknown device lists llvmpipe's.
func TestVulkanPlacementKnobs(t *testing.T) {
	model := tinyModel(t)
	r := vk(t, t.TempDir(), "--debug-log", "run", "-m", model, "-p", "16", "-n", "4", "-r", "1", "--no-kernels", "--no-probe",
		"-dev", "Vulkan0", "-ts", "1", "-ot", "ffn_up=CPU", "-nkvo", "-o", "json")
	recs := vkRecords(t, r)
	if len(recs) != 2 || recs[0].Backend != "Vulkan" {
		t.Fatalf("%+v", recs)
	}
	// To the CPU means host memory: llama.cpp picks the device's pinned
	// host buffers (Vulkan_Host) for it.
	if !strings.Contains(r.stderr, "blk.0.ffn_up.weight") || !strings.Contains(r.stderr, "buffer type overridden to Vulkan_Host") ||
		!strings.Contains(r.stderr, "Vulkan0 model buffer size") {
		t.Errorf("the override or the offload is not in llama.cpp's log:\n%s", tail(r.stderr))
	}
	if r := vk(t, t.TempDir(), "run", "-m", model, "-dev", "Vulkan7"); r.code != 2 || !strings.Contains(r.stderr, "have: Vulkan0") {
		t.Errorf("-dev Vulkan7: exit %d %s", r.code, r.stderr)
	}
}

// -ncmoe N with every layer offloaded keeps N layers' experts in host
// memory and the rest on the device, as read from the buffers the
// experts' products used; a sweep over N gives one record per N, and the
// report a column of N.
func TestVulkanCPUMoE(t *testing.T) {
	model := filepath.Join(t.TempDir(), "tiny-moe.gguf")
	if r := tokbench(t, "synth", "--preset", "tiny-moe", "--type", "f16", "--out", model); r.code != 0 {
		t.Fatalf("synth: %s", r.stderr)
	}
	out := filepath.Join(t.TempDir(), "moe.jsonl")
	if r := vk(t, t.TempDir(), "sweep", "-m", model, "-ngl", "99", "-ncmoe", "0,1,2", "-p", "0", "-n", "8", "-r", "2", "--no-kernels", "--out", out); r.code != 0 {
		t.Fatalf("sweep: %s", r.stderr)
	}
	data, _ := os.ReadFile(out)
	seen := map[int]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec struct {
			NCPUMoE int     `json:"n_cpu_moe"`
			Backend string  `json:"backend"`
			AvgTs   float64 `json:"avg_ts"`
			Experts struct {
				Bytes    int64            `json:"bytes"`
				Distinct float64          `json:"distinct_per_step"`
				OnDevice map[string]int64 `json:"on_device"`
			} `json:"experts"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		seen[rec.NCPUMoE] = true
		// tiny-moe's 2 layers hold the same bytes of experts each.
		layer := rec.Experts.Bytes / 2
		var host, dev int64
		for buf, b := range rec.Experts.OnDevice {
			if record.HostBuffer(buf) {
				host += b
			} else if buf == "Vulkan0" {
				dev += b
			}
		}
		if rec.Backend != "Vulkan" || rec.AvgTs <= 0 || rec.Experts.Distinct != 2 ||
			host != int64(rec.NCPUMoE)*layer || dev != int64(2-rec.NCPUMoE)*layer {
			t.Errorf("-ncmoe %d on %s, %.1f t/s, %.1f experts per step: experts placed %v, want %d bytes in host memory and %d on Vulkan0",
				rec.NCPUMoE, rec.Backend, rec.AvgTs, rec.Experts.Distinct, rec.Experts.OnDevice, int64(rec.NCPUMoE)*layer, int64(2-rec.NCPUMoE)*layer)
		}
	}
	if len(seen) != 3 {
		t.Errorf("records for -ncmoe %v, want 0, 1 and 2", seen)
	}
	if r := tokbench(t, "report", out); r.code != 0 || !strings.Contains(r.stdout, "ncmoe") {
		t.Errorf("report: exit %d, no ncmoe column:\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// The memory check knows where the experts go: a Qwen3-30B-A3B is far
// past llvmpipe's 2 GiB heap offloaded whole, and fits with every layer's
// experts kept in host memory (-ncmoe 48), planned without making it.
func TestVulkanMemoryCheckExperts(t *testing.T) {
	r := vk(t, t.TempDir(), "run", "--synth", "qwen3-30b-a3b", "--synth-type", "q4_0", "-ngl", "99", "-ncmoe", "0,48", "-p", "0", "-n", "16", "--dry-run")
	lines := strings.Split(r.stdout, "\n")
	if r.code != 0 || len(lines) < 3 || !strings.Contains(lines[1], " no ") || !strings.Contains(lines[2], " yes ") ||
		!strings.Contains(r.stdout, "but the GPUs have 2.00 GiB free") {
		t.Errorf("dry run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
