// Package healthchecks checks a spoke's onboarding contracts for real, one
// checker per boundary in the order of docs/contracts.md — identity → secrets →
// certificates → registry → queues → storage → workload — and reports the
// first failed boundary in a sentence a person can act on ("the workload
// identity is valid, but the queue eue1-jobs has not been provisioned").
//
// AWS is reached through aws-sdk-go-v2 with the credentials the identity
// check obtained from IAM Roles Anywhere, so every later AWS check proves
// the workload identity can do what workloads need. Kubernetes is read
// through client-go. Transient errors (throttling, 5xx, timeouts, and
// eventually consistent not-founds) are retried with capped backoff; what
// is still transient afterwards is Pending, hard errors are Failed. The
// checks only read (the optional PVC probe creates and deletes one claim),
// so running them twice changes nothing.
//
// Neighbours: healthchecks/ runs the checks (here, `spokeforge check`, and
// the agent in healthchecks/agent that writes them to the Onboarding
// status); lua/ only reads that status and reports it to Argo CD as health;
// cmp/ renders the objects being checked.
package healthchecks
