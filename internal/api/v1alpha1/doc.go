// Package v1alpha1 is spokeforge's API, spokeforge.io/v1alpha1: the records
// a platform admin commits to the gitops repo (Cluster, Organization,
// Product) and the Onboarding resource the CMP renders onto each spoke and
// the agent reports on.
//
// The types carry data and doc comments only; decoding lives in
// internal/record, validation in internal/validate, name derivation in
// internal/names. The Onboarding CRD (manifests/crds) and the records' JSON
// Schemas (schema/) are generated from them: `make generate`.
//
// +groupName=spokeforge.io
package v1alpha1
