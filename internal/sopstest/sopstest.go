// Package sopstest writes SOPS-encrypted secret files the way
// `sops --encrypt` does (the same library), for tests and the e2e suite:
// to age keys made at test time, so that no private key is ever committed,
// or to AWS KMS keys of the fake KMS (internal/awsfake). Only tests import
// it; the shipped binary does not contain it.
package sopstest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keys"
	"github.com/getsops/sops/v3/kms"
	"github.com/getsops/sops/v3/stores/yaml"
	"github.com/getsops/sops/v3/version"
	yamlv3 "go.yaml.in/yaml/v3"
)

// Key is an age key pair made for one test.
type Key struct {
	// Recipient is the public key (age1...), Identity the private one.
	Recipient, Identity string
}

// NewKey makes a fresh age X25519 key pair.
func NewKey() (Key, error) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return Key{}, err
	}
	return Key{Recipient: id.Recipient().String(), Identity: id.String()}, nil
}

// WriteIdentity writes the private key to dir/keys.txt (mode 0600), the
// file SOPS_AGE_KEY_FILE names, and returns its path.
func (k Key) WriteIdentity(dir string) (string, error) {
	p := filepath.Join(dir, "keys.txt")
	return p, os.WriteFile(p, []byte("# test-only age key, made at test time\n"+k.Identity+"\n"), 0o600)
}

// Encrypt returns values as a SOPS YAML file encrypted to the age
// recipients, keys in sorted order, as `sops --encrypt` writes it.
func Encrypt(values map[string]string, recipients ...string) ([]byte, error) {
	var group sops.KeyGroup
	for _, r := range recipients {
		mk, err := sopsage.MasterKeyFromRecipient(r)
		if err != nil {
			return nil, err
		}
		group = append(group, keys.MasterKey(mk))
	}
	return encrypt(values, group)
}

// UseFakeKMS points the AWS SDK's default configuration, which SOPS's KMS
// keys load to encrypt and to decrypt a data key, at a fake KMS for the
// rest of the test: AWS_ENDPOINT_URL_KMS is endpoint (an awsfake URL), the
// credentials are the static access key akid (one the fake knows, e.g.
// from StaticKey), and no profile, shared config file, web identity or
// instance metadata is read. It uses t.Setenv: not for parallel tests.
func UseFakeKMS(t testing.TB, endpoint, akid string) {
	t.Helper()
	none := filepath.Join(t.TempDir(), "no-aws-config")
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_KMS": endpoint, "AWS_ACCESS_KEY_ID": akid, "AWS_SECRET_ACCESS_KEY": "fake-secret",
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
	for _, k := range []string{"AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ROLE_ARN",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
}

// EncryptKMS is Encrypt to AWS KMS key ARNs: SOPS's kms.MasterKey encrypts
// the data key to each, with the encryption context (nil: none), through
// the SDK's default configuration as `sops --encrypt --kms` does. It
// refuses unless AWS_ENDPOINT_URL_KMS names a loopback endpoint
// (UseFakeKMS), so it never reaches a real KMS.
func EncryptKMS(values, context map[string]string, arns ...string) ([]byte, error) {
	ep := os.Getenv("AWS_ENDPOINT_URL_KMS")
	u, err := url.Parse(ep)
	if ep == "" || err != nil || !loopback(u.Hostname()) {
		return nil, fmt.Errorf("sopstest: AWS_ENDPOINT_URL_KMS=%q is not a local fake KMS: call UseFakeKMS first", ep)
	}
	var ctx map[string]*string
	if context != nil {
		ctx = map[string]*string{}
		for k, v := range context {
			ctx[k] = &v
		}
	}
	var group sops.KeyGroup
	for _, arn := range arns {
		group = append(group, kms.NewMasterKey(arn, "", ctx))
	}
	return encrypt(values, group)
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func encrypt(values map[string]string, group sops.KeyGroup) ([]byte, error) {
	var names []string
	for k := range values {
		names = append(names, k)
	}
	sort.Strings(names)
	doc := &yamlv3.Node{Kind: yamlv3.MappingNode}
	for _, k := range names {
		doc.Content = append(doc.Content,
			&yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!str", Value: k},
			&yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!str", Value: values[k], Style: yamlv3.DoubleQuotedStyle})
	}
	plain, err := yamlv3.Marshal(doc)
	if err != nil {
		return nil, err
	}
	store := yaml.NewStore(&config.YAMLStoreConfig{})
	branches, err := store.LoadPlainFile(plain)
	if err != nil {
		return nil, err
	}
	tree := sops.Tree{Branches: branches, Metadata: sops.Metadata{
		KeyGroups: []sops.KeyGroup{group}, UnencryptedSuffix: "_unencrypted", Version: version.Version,
	}}
	dataKey, errs := tree.GenerateDataKey()
	if len(errs) > 0 {
		var msgs []string
		for _, e := range errs {
			msgs = append(msgs, e.Error())
		}
		return nil, fmt.Errorf("generating the data key: %s", strings.Join(msgs, "; "))
	}
	cipher := aes.NewCipher()
	mac, err := tree.Encrypt(dataKey, cipher)
	if err != nil {
		return nil, err
	}
	tree.Metadata.LastModified = time.Now().UTC()
	tree.Metadata.MessageAuthenticationCode, err = cipher.Encrypt(mac, dataKey, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil {
		return nil, err
	}
	return store.EmitEncryptedFile(tree)
}
