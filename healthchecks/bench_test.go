package healthchecks

import (
	"context"
	"testing"
)

// BenchmarkRun is one full check of all seven boundaries against the local
// AWS endpoints and fake Kubernetes clients: the cost of one agent cycle
// without network latency (Roles Anywhere exchange, STS, Secrets Manager,
// ECR, SQS, S3 and the spoke reads).
func BenchmarkRun(b *testing.B) {
	w := newWorld(b)
	w.run(b) // build the clients once
	cfg := w.cfg
	b.ResetTimer()
	for b.Loop() {
		rep := Run(context.Background(), cfg)
		if rep.FirstFailed != "" {
			b.Fatalf("first failed %s: %s", rep.FirstFailed, rep.Message)
		}
	}
}

// BenchmarkSummarise is the first-failed sentence alone.
func BenchmarkSummarise(b *testing.B) {
	res := make([]Result, 0, 7)
	for i, name := range []string{"Identity", "Secrets", "Certificates", "Registry", "Queues", "Storage", "Workload"} {
		st := Passed
		if i == 4 {
			st = Failed
		}
		res = append(res, Result{Boundary: name, State: st, Summary: "the queue q has not been provisioned"})
	}
	for b.Loop() {
		Summarise(res)
	}
}
