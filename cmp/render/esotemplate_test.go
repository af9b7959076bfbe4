package render

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"sort"
	"testing"
	"text/template"
	"text/template/parse"
	"unicode/utf8"

	"github.com/Masterminds/sprig/v3"
)

// esoExecute executes one template of an ExternalSecret's target.template.data
// as External Secrets Operator's engine v2 does (pkg/template/v2 execute, in
// v0.16.2): text/template with missingkey=error, sprig's text functions less
// env and expandenv, over the store's values as strings.
func esoExecute(t *testing.T, text string, data map[string]string) string {
	t.Helper()
	funcs := sprig.TxtFuncMap()
	delete(funcs, "env")
	delete(funcs, "expandenv")
	tpl, err := template.New("t").Option("missingkey=error").Funcs(funcs).Parse(text)
	if err != nil {
		t.Fatalf("parse %s: %v", text, err)
	}
	var b bytes.Buffer
	if err := tpl.Execute(&b, data); err != nil {
		t.Fatalf("execute %s: %v", text, err)
	}
	return b.String()
}

// hostileStoreValues are what a store's secret may hold, whoever wrote it:
// quotes that close the JSON string and add execProviderConfig, backslashes,
// line breaks, template delimiters, NUL, bytes that are not UTF-8.
var hostileStoreValues = []string{
	"plain-token",
	`x","execProviderConfig":{"command":"/bin/sh","args":["-c","id"],"apiVersion":"client.authentication.k8s.io/v1beta1"},"bearerToken":"y`,
	`x"},"execProviderConfig":{"command":"sh"},"tlsClientConfig":{"insecure":true,"caData":"`,
	`\",\"insecure\":true,\"x\":\"`,
	"a\nb\r\n\"c\u2028\u2029",
	`{{ .bearerToken }}{{ env "HOME" }}`,
	"\x00\x01\x7f",
	"\xff\xfe\"",
	`<script>&amp;</script>`,
	"",
}

// shape is v with every leaf replaced by its JSON kind: what the fields are, not what they hold.
func shape(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = shape(e)
		}
		return out
	case string:
		return "string"
	default:
		return reflect.TypeOf(v).String()
	}
}

// externalSecretTemplate returns the target.template of the ExternalSecret named name in objs.
func externalSecretTemplate(t *testing.T, objs []Object, name string) map[string]any {
	t.Helper()
	for _, o := range objs {
		md, _ := o.Obj["metadata"].(map[string]any)
		if o.Obj["kind"] == "ExternalSecret" && md["name"] == name {
			spec, _ := o.Obj["spec"].(map[string]any)
			target, _ := spec["target"].(map[string]any)
			tpl, _ := target["template"].(map[string]any)
			return tpl
		}
	}
	t.Fatalf("no ExternalSecret %s rendered", name)
	return nil
}

// TestClusterConfigHoldsOnlyTheCredentialFields executes the hub render's
// cluster config templates as External Secrets does, over hostile store
// values: the config is JSON with exactly the fields of the record's
// credential type, each value the store's (base64 where Argo CD wants it),
// and the store's other keys never reach the Secret (mergePolicy Replace).
func TestClusterConfigHoldsOnlyTheCredentialFields(t *testing.T) {
	for _, tc := range []struct {
		cluster string
		keys    []string
		want    any
		value   func(data map[string]string) any
	}{
		{"gpu-east-1", []string{"caData", "bearerToken"},
			map[string]any{"bearerToken": "string", "tlsClientConfig": map[string]any{"caData": "string"}},
			func(d map[string]string) any {
				return map[string]any{"bearerToken": d["bearerToken"], "tlsClientConfig": map[string]any{"caData": b64(d["caData"])}}
			}},
		{"gpu-west-2", []string{"caData", "certData", "keyData"},
			map[string]any{"tlsClientConfig": map[string]any{"caData": "string", "certData": "string", "keyData": "string"}},
			func(d map[string]string) any {
				return map[string]any{"tlsClientConfig": map[string]any{"caData": b64(d["caData"]), "certData": b64(d["certData"]), "keyData": b64(d["keyData"])}}
			}},
	} {
		t.Run(tc.cluster, func(t *testing.T) {
			e := exampleCluster(t, tc.cluster)
			objs, err := Hub(e, fuzzOptions)
			if err != nil {
				t.Fatal(err)
			}
			tpl := externalSecretTemplate(t, objs, e.Names.ArgoCD.ClusterSecret)
			if tpl["engineVersion"] != "v2" || tpl["mergePolicy"] != "Replace" {
				t.Fatalf("template engineVersion %v, mergePolicy %v: want v2 and Replace, so the store's other keys stay out of the Secret", tpl["engineVersion"], tpl["mergePolicy"])
			}
			data, _ := tpl["data"].(map[string]any)
			var keys []string
			for k := range data {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if !reflect.DeepEqual(keys, []string{"config", "name", "server"}) {
				t.Fatalf("templated keys %v, want config, name, server", keys)
			}
			text, _ := data["config"].(string)
			for _, v := range hostileStoreValues {
				store := map[string]string{"execProviderConfig": `{"command":"sh"}`}
				for _, k := range tc.keys {
					store[k] = v
				}
				out := esoExecute(t, text, store)
				var got any
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					t.Fatalf("value %q: config is not JSON: %v\n%s", v, err, out)
				}
				if s := shape(got); !reflect.DeepEqual(s, tc.want) {
					t.Errorf("value %q: config fields %v, want exactly %v", v, s, tc.want)
				}
				if utf8.ValidString(v) && !reflect.DeepEqual(got, tc.value(store)) {
					t.Errorf("value %q: config %v does not hold the store's values", v, got)
				}
			}
		})
	}
}

// TestDockerConfigHoldsOnlyTheRegistryFields does the same for the spoke's
// registry pull secret, over hostile output of the ECR token generator.
func TestDockerConfigHoldsOnlyTheRegistryFields(t *testing.T) {
	e := exampleCluster(t, "gpu-east-1")
	objs, err := Spoke(e, fuzzOptions)
	if err != nil {
		t.Fatal(err)
	}
	tpl := externalSecretTemplate(t, objs, "spokeforge-registry")
	if tpl["engineVersion"] != "v2" || tpl["mergePolicy"] != "Replace" {
		t.Fatalf("template engineVersion %v, mergePolicy %v: want v2 and Replace", tpl["engineVersion"], tpl["mergePolicy"])
	}
	data, _ := tpl["data"].(map[string]any)
	text, _ := data[".dockerconfigjson"].(string)
	for _, v := range hostileStoreValues {
		store := map[string]string{"proxy_endpoint": "https://1.dkr.ecr.us-east-1.amazonaws.com" + v, "username": "AWS" + v, "password": v}
		out := esoExecute(t, text, store)
		var got map[string]map[string]map[string]string
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("value %q: not a docker config of string fields: %v\n%s", v, err, out)
		}
		if len(got) != 1 || len(got["auths"]) != 1 {
			t.Fatalf("value %q: %s: want auths with one registry", v, out)
		}
		for reg, a := range got["auths"] {
			if len(a) != 3 || a["username"] == "" {
				t.Errorf("value %q: registry fields %v, want exactly username, password, auth", v, a)
			}
			if utf8.ValidString(v) && (reg != store["proxy_endpoint"] || a["password"] != v || a["auth"] != b64(store["username"]+":"+v)) {
				t.Errorf("value %q: %s does not hold the generator's values", v, out)
			}
		}
	}
}

// TestESOTemplatesAreOneEncodedObject: each External Secrets template is a
// single action that ends in toJson, with no text around it, so no later
// edit can paste a value between quotes.
func TestESOTemplatesAreOneEncodedObject(t *testing.T) {
	for name, text := range map[string]string{
		"bearerToken": bearerTokenConfigTemplate, "clientCertificate": clientCertificateConfigTemplate, "docker": dockerConfigTemplate,
	} {
		tpl, err := template.New(name).Funcs(sprig.TxtFuncMap()).Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		nodes := tpl.Tree.Root.Nodes
		action, ok := nodes[0].(*parse.ActionNode)
		if len(nodes) != 1 || !ok {
			t.Fatalf("%s: %d nodes; want one action and no text: %s", name, len(nodes), text)
		}
		last := action.Pipe.Cmds[len(action.Pipe.Cmds)-1]
		if id, ok := last.Args[0].(*parse.IdentifierNode); !ok || id.Ident != "toJson" {
			t.Errorf("%s: %s does not end in toJson", name, action)
		}
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
