// Package register replaces external-secrets v0.16.2's pkg/generator/register in the e2e build:
// the rendered spoke uses only the ECR authorization-token generator.
package register

import (
	_ "github.com/external-secrets/external-secrets/pkg/generator/ecr"
)
