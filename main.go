// Command spokeforge onboards GPU Kubernetes spokes to a hub Argo CD:
// it renders a spoke from its cluster record (the CMP), validates a
// gitops repo, and prints the names a record derives.
package main

import (
	"os"

	"github.com/spokeforge/spokeforge/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
