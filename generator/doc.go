// Package generator is spokeforge's Argo CD ApplicationSet plugin
// generator: an HTTP service that answers Argo CD's
// POST /api/v1/getparams.execute with one parameter set per cluster record
// (kind: clusters, for the app-of-apps) or per zone that may be placed
// (kind: zones, the placement rules of docs/generator.md).
//
// It reads the gitops repo as whole validated snapshots (an invalid commit
// keeps the last good one; unchanged files are reused by git blob hash) and
// the hub's Argo CD cluster Secrets and Applications through client-go
// informers, and serves answers encoded once per snapshot and hub state.
// Placement reads nothing else, and each answer first confirms the repo head,
// so replicas behind one Service answer alike. Whenever it cannot give the
// whole truth it answers an error, never a shorter list: Argo CD's
// ApplicationSet controller keeps existing Applications on an error but
// deletes them on a 200 that lacks them.
//
// Neighbours: cmp/ renders what a generated Application deploys (the
// app-of-apps runs the CMP in hub mode); generator/ only decides which
// Applications exist and where they point.
package generator
