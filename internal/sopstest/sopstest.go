// Package sopstest writes SOPS-encrypted secret files the way
// `sops --encrypt` does (the same library, age recipients), for tests and
// the e2e suite, with age keys made at test time: no private key is ever
// committed. Only tests import it; the shipped binary does not contain it.
package sopstest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"filippo.io/age"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keys"
	"github.com/getsops/sops/v3/stores/yaml"
	"github.com/getsops/sops/v3/version"
	yamlv3 "gopkg.in/yaml.v3"
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
	var group sops.KeyGroup
	for _, r := range recipients {
		mk, err := sopsage.MasterKeyFromRecipient(r)
		if err != nil {
			return nil, err
		}
		group = append(group, keys.MasterKey(mk))
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
