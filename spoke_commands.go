//go:build !cmponly

package main

import (
	"io"

	"github.com/spf13/cobra"
)

// spokeCommands are the commands that run as services or on the spoke, or talk to AWS and
// Kubernetes (credentials, check, agent, generator, secrets sync). A build with -tags cmponly
// leaves them out, and with them the AWS SDKs and client-go's typed clients, which every
// process of the full binary loads and initialises: the CMP sidecar, which starts
// spokeforge render on every manifest refresh, needs only render (docs/benchmarks.md).
func spokeCommands(stdout, stderr io.Writer) []*cobra.Command {
	return []*cobra.Command{credentialsCmd(stderr), checkCmd(stdout, stderr), agentCmd(stderr), generatorCmd(stderr), secretsCmd(stdout, stderr)}
}
