module github.com/tokbench/tokbench

go 1.26.0

require (
	github.com/NVIDIA/go-nvml v0.13.4-1
	github.com/montanaflynn/stats v0.14.0
	github.com/ollama/ollama v0.17.4
	github.com/prometheus/client_golang v1.25.0
	github.com/urfave/cli/v2 v2.27.7
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/cpuguy83/go-md2man/v2 v2.0.7 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/russross/blackfriday/v2 v2.1.0 // indirect
	github.com/xrash/smetrics v0.0.0-20240521201337-686a1a2994c1 // indirect
	golang.org/x/sys v0.48.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
