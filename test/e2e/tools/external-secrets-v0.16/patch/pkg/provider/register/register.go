// Package register replaces external-secrets v0.16.2's pkg/provider/register in the e2e build:
// the suite's ClusterSecretStore uses only the AWS provider, and v0.16.2 has no build tags to leave
// the other 34 providers (and their cloud SDKs) out.
package register

import (
	_ "github.com/external-secrets/external-secrets/pkg/provider/aws"
)
