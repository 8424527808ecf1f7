package record

import "testing"

// The roofline reads the experts measured, and the uniform expectation
// only where nothing was measured.
func TestRooflineReadsMeasuredExperts(t *testing.T) {
	r := Record{Model: Model{WeightsStepBytes: 1e6, Experts: &Experts{Count: 8, Used: 2, Bytes: 8e6, Uniform: 7.2, Distinct: 6.81}}}
	if in := r.RooflineInputs(); in.ExpertsPerStep != 6.81 || in.NExpert != 8 || in.ExpertBytes != 8e6 {
		t.Errorf("measured: %+v", in)
	}
	r.Experts.Distinct = 0
	if in := r.RooflineInputs(); in.ExpertsPerStep != 7.2 {
		t.Errorf("not measured: %v experts per step, want the uniform 7.2", in.ExpertsPerStep)
	}
	if !HostBuffer("CPU_Mapped") || !HostBuffer("Vulkan_Host") || HostBuffer("CUDA0") {
		t.Error("host buffers")
	}
}
