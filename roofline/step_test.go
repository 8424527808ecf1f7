package roofline

import "testing"

// The tiny preset's shape: 2 layers, embedding 256, feed-forward 768, 4
// heads of 64, 2 KV heads, a vocabulary of 1024, Q8_0 weights.
func tinyShape() Shape {
	s := Shape{NLayer: 2, NEmbd: 256, NFF: 768, NHead: 4, NHeadKV: 2, HeadK: 64, HeadV: 64, TypeK: "f16", TypeV: "f16", FlashAttn: true}
	mat := func(name string, k, m int64) { s.Tensors = append(s.Tensors, Tensor{name, "q8_0", []int64{k, m}}) }
	mat("token_embd.weight", 256, 1024)
	s.Tensors = append(s.Tensors, Tensor{"output_norm.weight", "f32", []int64{256}})
	mat("output.weight", 256, 1024)
	for _, l := range []string{"0", "1"} {
		s.Tensors = append(s.Tensors, Tensor{"blk." + l + ".attn_norm.weight", "f32", []int64{256}})
		mat("blk."+l+".attn_q.weight", 256, 256)
		mat("blk."+l+".attn_k.weight", 256, 128)
		mat("blk."+l+".attn_v.weight", 256, 128)
		mat("blk."+l+".attn_output.weight", 256, 256)
		mat("blk."+l+".ffn_gate.weight", 256, 768)
		mat("blk."+l+".ffn_up.weight", 256, 768)
		mat("blk."+l+".ffn_down.weight", 768, 256)
	}
	return s
}

func TestStepOps(t *testing.T) {
	ops := StepOps(tinyShape(), 4, 100, 4)
	byName := map[string]Op{}
	var weightBytes float64
	for _, o := range ops {
		byName[o.Name] = o
		if o.Kind == OpMatMul {
			weightBytes += o.Bytes - 4*float64(o.N*(o.A+o.B))*float64(o.Count)
		}
	}
	q := byName["mul_mat q8_0 256x256 (attn_q,attn_output)"]
	if q.Count != 4 || q.N != 4 || q.Flops != 4*2*256*256*4 {
		t.Errorf("attn_q+attn_output: %+v", q)
	}
	// Every matrix is read once per step: the layers' and the output's,
	// not the embedding table (a lookup of 4 rows).
	want := (2*(256*256*2+256*128*2+256*768*3) + 256*1024) * 34.0 / 32
	if weightBytes != want {
		t.Errorf("weights read per step %.0f, want %.0f", weightBytes, want)
	}
	fa := byName["flash_attn f16/f16 over 100"]
	if fa.Kind != OpFlash || fa.Count != 2 || fa.Bytes != 2*(100*2*(128+128)+2*4*4*64*4) {
		t.Errorf("attention: %+v", fa)
	}
	if o := byName["mul_mat q8_0 256x1024 (output)"]; o.N != 4 || o.Count != 1 {
		t.Errorf("output: %+v", o)
	}
	if n := byName["rms_norm"]; n.Count != 5 {
		t.Errorf("norms: %+v", n)
	}
	tied := tinyShape()
	tied.Tensors = append(tied.Tensors[:2], tied.Tensors[3:]...) // no output.weight
	for _, o := range StepOps(tied, 1, 1, 1) {
		if o.Name == "mul_mat q8_0 256x1024 (output)" {
			return
		}
	}
	t.Error("a tied model has no output projection")
}

func TestProfileGroups(t *testing.T) {
	nodes := []Node{
		{"MUL_MAT", "q4_0", "ffn_up-0", 3e6}, {"MUL_MAT", "q4_0", "ffn_up-1", 3e6},
		{"SET_ROWS", "", "cache_k_l0", 1e6}, {"SET_ROWS", "", "cache_k_l1", 1e6},
		{"VIEW", "", "cache_k_l0 (view)", 0}, {"PERMUTE", "", "Qcur-0", 0},
		{"CPY", "", "k_cache_view-3 (copy)", 2e6},
	}
	gs := Group(nodes, 2)
	want := []ProfileGroup{
		{Name: "mul_mat q4_0 (ffn_up)", Nodes: 1, Ms: 3, Share: 0.6},
		{Name: "set_rows (cache_k)", Nodes: 1, Ms: 1, Share: 0.2},
		{Name: "cpy (k_cache_view)", Nodes: 0.5, Ms: 1, Share: 0.2},
		{Name: "view, reshape, permute (no compute)", Nodes: 1, Ms: 0, Share: 0},
	}
	if len(gs) != len(want) {
		t.Fatalf("%+v", gs)
	}
	for i := range want {
		if gs[i].Name != want[i].Name || !near(gs[i].Ms+1, want[i].Ms+1) || !near(gs[i].Share+1, want[i].Share+1) || gs[i].Nodes != want[i].Nodes {
			t.Errorf("group %d: %+v, want %+v", i, gs[i], want[i])
		}
	}
}
