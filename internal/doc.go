// Package internal is the shared lower layer: the API types (api/v1alpha1),
// reading records strictly (record, repo, safefile), validating them
// (validate), deriving names (names), the Onboarding spec (onboarding),
// Roles Anywhere credentials (credentials), the JSON Schemas (schema) and a
// fake AWS for tests (awsfake). It imports nothing above it: cmp/,
// generator/ and healthchecks/ import internal/, never the reverse, and the
// root main package wires them into commands.
package internal
