package cmp

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestAgentImage(t *testing.T) {
	digest := "@sha256:" + strings.Repeat("0a", 32)
	cases := []struct {
		name             string
		param, app, side string
		want             string // the image chosen; "" when refused
		refusal          string
	}{
		{name: "none anywhere", refusal: "no agent image: set SPOKEFORGE_IMAGE on the spokeforge sidecar"},
		{name: "the sidecar's", side: "registry.example.com:5000/platform/spokeforge:v1.2.3", want: "registry.example.com:5000/platform/spokeforge:v1.2.3"},
		{name: "the Application's env over the sidecar's", app: "ghcr.io/acme/spokeforge:v2", side: "ghcr.io/acme/spokeforge:v1", want: "ghcr.io/acme/spokeforge:v2"},
		{name: "the parameter over both", param: "ghcr.io/acme/spokeforge" + digest, app: "ghcr.io/acme/spokeforge:v2", side: "ghcr.io/acme/spokeforge:v1", want: "ghcr.io/acme/spokeforge" + digest},
		{name: "tag and digest", side: "ghcr.io/acme/spokeforge:v1" + digest, want: "ghcr.io/acme/spokeforge:v1" + digest},
		{name: "no registry host", side: "spokeforge:v1", want: "spokeforge:v1"},
		{name: "no tag or digest", side: "ghcr.io/acme/spokeforge", refusal: "SPOKEFORGE_IMAGE of the spokeforge sidecar is not an image reference with a tag or digest"},
		{name: "uppercase repository", param: "ghcr.io/Acme/spokeforge:v1", side: "ghcr.io/acme/spokeforge:v1", refusal: "plugin parameter image is not an image reference"},
		{name: "short digest", app: "ghcr.io/acme/spokeforge@sha256:0a0a", refusal: "the Application's env SPOKEFORGE_IMAGE (ARGOCD_ENV_SPOKEFORGE_IMAGE) is not an image reference"},
		{name: "credentials in the reference", side: "deploy:hunter2@ghcr.io/acme/spokeforge:v1", refusal: "is not an image reference"},
		{name: "a scheme", side: "https://ghcr.io/acme/spokeforge:v1", refusal: "is not an image reference"},
		{name: "spaces", side: "ghcr.io/acme/spokeforge:v1 --privileged", refusal: "is not an image reference"},
		{name: "a tag too long", side: "ghcr.io/acme/spokeforge:" + strings.Repeat("v", 129), refusal: "is not an image reference"},
		{name: "a YAML break", side: "ghcr.io/acme/spokeforge:v1\n  privileged: true", refusal: "SPOKEFORGE_IMAGE holds a control or invisible character"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"SPOKEFORGE_IMAGE": tc.side, "ARGOCD_ENV_SPOKEFORGE_IMAGE": tc.app}
			if tc.param != "" {
				b, _ := json.Marshal([]map[string]string{{"name": "image", "string": tc.param}})
				env["ARGOCD_APP_PARAMETERS"] = string(b)
			}
			_, opts, err := renderOptions(ModeSpoke, func(k string) string { return env[k] })
			if tc.refusal != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refusal) {
					t.Fatalf("err = %v; want %q", err, tc.refusal)
				}
				for _, v := range []string{tc.param, tc.app, tc.side} {
					if v != "" && strings.Contains(err.Error(), v) {
						t.Errorf("the refusal repeats the value %q: %v", v, err)
					}
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("the refusal repeats a credential: %v", err)
				}
				return
			}
			if err != nil || opts.Image != tc.want {
				t.Fatalf("image %q, err %v; want %q", opts.Image, err, tc.want)
			}
		})
	}
}

// TestAgentImageOnlyForSpokes: hub and projects renders put no agent anywhere and need no image.
func TestAgentImageOnlyForSpokes(t *testing.T) {
	for _, mode := range []string{ModeHub, ModeProjects} {
		if _, _, err := renderOptions(mode, func(string) string { return "" }); err != nil {
			t.Errorf("%s: %v", mode, err)
		}
	}
}

// FuzzAgentImage: any value is either refused without being repeated, or is one line of
// printable characters that the rendered Deployment carries as a plain string.
func FuzzAgentImage(f *testing.F) {
	for _, s := range []string{"ghcr.io/acme/spokeforge:v1", "spokeforge", "a:b@c/d:e", "x/y@sha256:" + strings.Repeat("f", 64), "localhost:5000/a/b:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, image string) {
		got, err := agentImage(map[string]string{}, func(k string) string {
			if k == "SPOKEFORGE_IMAGE" {
				return image
			}
			return ""
		})
		if err != nil {
			// The refusal is a fixed sentence: nothing of the value is in it.
			if err.Error() != "SPOKEFORGE_IMAGE of the spokeforge sidecar is not an image reference with a tag or digest (registry/repository:tag, or @sha256:<64 hex>)" {
				t.Fatalf("refusal %q", err)
			}
			return
		}
		if got != image || strings.ContainsAny(got, " \t\r\n\"'#{}[],&*!|>%`") || len(got) > 512 {
			t.Fatalf("accepted %q", got)
		}
	})
}
