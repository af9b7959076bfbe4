// Package secrets synchronises a gitops repo's SOPS-encrypted secret files
// (internal/secretfile) into AWS Secrets Manager at the names the records
// derive (internal/names): `spokeforge secrets sync`.
//
// It decrypts each file with the SOPS library (age identities from the
// standard SOPS environment, AWS KMS through the SDK's default chain) and
// writes through aws-sdk-go-v2, so AWS_ENDPOINT_URL and the standard
// retryer apply as everywhere. It is idempotent (a current value is
// compared, never rewritten, and tags are set only when they differ), it
// retries what Secrets Manager's eventual consistency and throttling make
// transient and nothing else (Policy), it handles each file on its own and
// reports every secret, and it never deletes a secret. No value, decrypted
// byte or ciphertext is ever printed, logged or put in an error: the
// report names keys only (docs/secrets.md).
package secrets
