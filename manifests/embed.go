// Package manifests holds the kustomize install bundles (cmp, argocd-cm,
// crds, generator). Go code reads one file from here: the Onboarding CRD,
// generated from internal/api/v1alpha1 by controller-gen (make generate),
// which every spoke render carries.
package manifests

import _ "embed"

// OnboardingCRD is crds/onboarding.yaml.
//
//go:embed crds/onboarding.yaml
var OnboardingCRD []byte
