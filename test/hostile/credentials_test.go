package hostile

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spokeforge/spokeforge/generator"
)

// canary is planted under connection.credentials; no output may hold it.
const canary = "CANARYcred7q"

// credentialForms are credentials blocks of gpu-east-1 (replacing its
// "credentials:\n  type: bearerToken" at 4 spaces) with the canary in every
// position a value, a key, a tag, an anchor or a type can take, in every
// shape a field may wrongly have: scalars of each type, lists, mappings,
// multi-line blocks, unknown and duplicate keys, and YAML that does not parse.
var credentialForms = map[string]string{
	"token-list":                "type: bearerToken\n  token: [%s]",
	"token-mapping-value":       "type: bearerToken\n  token: {a: %s}",
	"token-mapping-key":         "type: bearerToken\n  token: {%s: a}",
	"token-string":              "type: bearerToken\n  token: %s",
	"token-number":              "type: bearerToken\n  token: 9%s",
	"token-int":                 "type: bearerToken\n  token: 918273645501",
	"token-float":               "type: bearerToken\n  token: 9182736.45501",
	"token-literal-block":       "type: bearerToken\n  token: |\n    line one\n    %s\n    line three",
	"token-folded-block":        "type: bearerToken\n  token: >-\n    %s\n    more",
	"token-control-char":        "type: bearerToken\n  token: \"%s\\u0001\"",
	"token-tab":                 "type: bearerToken\n  token: \"%s\\tx\"",
	"token-newline":             "type: bearerToken\n  token: \"%s\\nx\"",
	"token-bidi":                "type: bearerToken\n  token: \"%s\\u202e\"",
	"token-binary-tag":          "type: bearerToken\n  token: !!binary %s",
	"token-int-tag":             "type: bearerToken\n  token: !!int %s",
	"token-custom-tag":          "type: bearerToken\n  token: !%s x",
	"token-anchor":              "type: bearerToken\n  token: &%s x",
	"token-unknown-alias":       "type: bearerToken\n  token: *%s",
	"token-duplicate":           "type: bearerToken\n  token: %[1]s\n  token: %[1]s",
	"token-merge-key":           "type: bearerToken\n  <<: {token: %s}",
	"token-complex-key":         "type: bearerToken\n  ? [%s]\n  : x",
	"token-unterminated-flow":   "type: bearerToken\n  token: {%s",
	"token-unterminated-quote":  "type: bearerToken\n  token: \"%s",
	"token-bad-indent":          "type: bearerToken\n  token: %s\n   x: y",
	"credentials-string":        "%s",
	"credentials-list":          "[%s]",
	"credentials-number":        "9%s",
	"credentials-block":         "|\n  %s",
	"type-value":                "type: %s",
	"type-list":                 "type: [%s]",
	"type-mapping":              "type: {%s: x}",
	"type-number":               "type: 918273645501",
	"secretname-not-slug":       "type: bearerToken\n  secretName: \"%s!\"",
	"secretname-mapping":        "type: bearerToken\n  secretName: {a: %s}",
	"secretname-list":           "type: bearerToken\n  secretName: [%s]",
	"secretname-too-long":       "type: bearerToken\n  secretName: %s" + strings.Repeat("x", 200),
	"exec-string":               "type: bearerToken\n  exec: %s",
	"exec-list":                 "type: bearerToken\n  exec: [%s]",
	"exec-command":              "type: bearerToken\n  exec: {command: %s}",
	"exec-key":                  "type: bearerToken\n  exec: {%s: x}",
	"exec-nested-key":           "type: bearerToken\n  exec: {env: [{%s: [x]}]}",
	"exec-duplicate-key":        "type: bearerToken\n  exec: {%[1]s: x, %[1]s: y}",
	"exec-control-key":          "type: bearerToken\n  exec: {\"%s\\u0001\": x}",
	"exec-non-string-key":       "type: bearerToken\n  exec: {[%s]: x}",
	"exec-int-key":              "type: bearerToken\n  exec: {918273645501: x}",
	"exec-control-value":        "type: bearerToken\n  exec: {a: \"%s\\u0001\"}",
	"exec-int-tag-value":        "type: bearerToken\n  exec: {a: !!int %s}",
	"exec-float-tag-key":        "type: bearerToken\n  exec: {!!float %s: x}",
	"exec-key-control-value":    "type: bearerToken\n  exec: {%s: \"x\\u0001\"}",
	"exec-key-nested-duplicate": "type: bearerToken\n  exec: {%[1]s: {%[1]s: 1, %[1]s: 2}}",
	"exec-alias-to-anchor":      "type: bearerToken\n  exec: {a: &%[1]s x, b: *%[1]s}",
	"token-self-anchor":         "type: bearerToken\n  token: &%[1]s [*%[1]s]",
	"authprovider-string":       "type: bearerToken\n  authProvider: %s",
	"authprovider-config":       "type: bearerToken\n  authProvider: {config: {%[1]s: %[1]s}}",
	"tokenfile-mapping":         "type: bearerToken\n  tokenFile: {a: %s}",
	"tokenfile-string":          "type: bearerToken\n  tokenFile: /tmp/%s",
	"clientkeydata":             "type: clientCertificate\n  clientKeyData: %s",
	"clientkeydata-list":        "type: clientCertificate\n  clientKeyData: [%s]",
	"unknown-key":               "type: bearerToken\n  %s: x",
	"unknown-value":             "type: bearerToken\n  password: %s",
	"unknown-key-and-value":     "type: bearerToken\n  %[1]s: %[1]s",
	"unknown-duplicate-key":     "type: bearerToken\n  %[1]s: x\n  %[1]s: y",
	"unknown-control-key":       "type: bearerToken\n  \"%s\\u0001\": x",
	"unknown-mapping":           "type: bearerToken\n  password: {%[1]s: [%[1]s]}",
	"unknown-key-long":          "type: bearerToken\n  %s" + strings.Repeat("k", 100) + ": x",
	"unknown-key-number-value":  "type: bearerToken\n  pin: 9%s",
	"unknown-null-key":          "type: bearerToken\n  ~: %s",
	"unknown-bool-value":        "type: bearerToken\n  %s: true",
	"token-with-valid-type":     "type: clientCertificate\n  token: %s",
	"incluster-with-credential": "type: bearerToken\n  token: %s",
}

// TestCredentialCanaryNeverRepeated plants the canary in every form above and
// greps every output of validate, render (spoke, hub, projects), names and the
// generator: each refuses the record, none repeats the canary.
func TestCredentialCanaryNeverRepeated(t *testing.T) {
	const block = "    credentials:\n      type: bearerToken\n"
	for name, form := range credentialForms {
		t.Run(name, func(t *testing.T) {
			text := form
			if strings.Contains(form, "%") {
				text = fmt.Sprintf(form, canary)
			}
			with := "    credentials: " + strings.ReplaceAll(text, "\n", "\n    ") + "\n"
			if strings.Contains(text, "\n") || strings.HasPrefix(text, "type:") {
				with = "    credentials:\n      " + strings.ReplaceAll(text, "\n", "\n    ") + "\n"
			}
			if strings.HasPrefix(text, "|") {
				with = "    credentials: " + strings.ReplaceAll(text, "\n", "\n    ") + "\n"
			}
			edits := []Edit{{File: "clusters/gpu-east-1/cluster.yaml", Replace: block, With: with}}
			if name == "incluster-with-credential" {
				edits = append(edits, Edit{File: "clusters/gpu-east-1/cluster.yaml", Replace: "    server: https://10.20.0.10:6443\n", With: "    inCluster: true\n"})
			}
			root := materialise(t, Case{Edits: edits})
			var streams []string
			code, out, errs := run("validate", root)
			streams = append(streams, out, errs)
			if code == 0 {
				t.Errorf("validate accepted it")
			}
			t.Setenv("ARGOCD_APP_SOURCE_REPO_URL", "https://git.example.com/gitops.git")
			t.Setenv("SPOKEFORGE_IMAGE", testImage)
			t.Setenv("KUBE_API_VERSIONS", "v1,external-secrets.io/v1,multicluster.x-k8s.io/v1alpha1")
			for _, mode := range []string{"spoke", "hub"} {
				code, out, errs := run("render", "--mode", mode, filepath.Join(root, "clusters", "gpu-east-1"))
				streams = append(streams, out, errs)
				if code == 0 {
					t.Errorf("render --mode %s accepted it", mode)
				}
			}
			code, out, errs = run("render", "--mode", "projects", root)
			streams = append(streams, out, errs)
			code, out, errs = run("names", root)
			streams = append(streams, out, errs)
			if code == 0 {
				t.Errorf("names accepted it")
			}
			src, err := generator.NewGitSource(generator.GitConfig{Repo: root, App: generator.AppSource{RepoURL: "https://git.example.com/gitops.git", TargetRevision: "main", ArgoNamespace: "argocd"}})
			if err != nil {
				t.Fatal(err)
			}
			st, _ := src.Refresh(t.Context())
			streams = append(streams, st.HeadError, strings.Join(st.HeadErrors, "\n"), st.FetchError)
			if st.HeadError == "" {
				t.Errorf("the generator accepted it")
			}
			for _, s := range streams {
				if strings.Contains(s, canary) || strings.Contains(s, "918273645501") || strings.Contains(s, "9182736.45501") {
					t.Errorf("the canary appears in an output stream: %q", s)
				}
			}
		})
	}
}
