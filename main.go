// Command spokeforge onboards GPU Kubernetes spokes to a hub Argo CD: it
// renders a spoke from its cluster record (the CMP), validates a gitops
// repo, prints the names a record derives, serves the ApplicationSet
// plugin generator, and on the spoke keeps AWS credentials and the
// Onboarding status. This package only parses flags and calls one entry
// point per command (cmp, generator, healthchecks); every command builds its
// whole output in memory and writes it only on success.
package main

import "os"

func main() {
	os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
}
