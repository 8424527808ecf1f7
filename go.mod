module github.com/tokbench/tokbench

go 1.26

require (
	github.com/montanaflynn/stats v0.14.0
	github.com/ollama/ollama v0.17.4
	github.com/urfave/cli/v2 v2.27.7
)

require (
	github.com/NVIDIA/go-nvml v0.13.4-1 // indirect
	github.com/cpuguy83/go-md2man/v2 v2.0.7 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/russross/blackfriday/v2 v2.1.0 // indirect
	github.com/xrash/smetrics v0.0.0-20240521201337-686a1a2994c1 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
