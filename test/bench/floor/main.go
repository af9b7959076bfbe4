// Command floor is make bench's floor: a Go binary that only starts and prints the golden
// render of the example GPU spoke, embedded. test/bench/bench.sh copies
// examples/gitops/rendered/gpu-east-1.spoke.yaml next to it as out.yaml before building.
//
//go:build benchfloor

package main

import (
	_ "embed"
	"os"
)

//go:embed out.yaml
var out []byte

func main() { os.Stdout.Write(out) }
