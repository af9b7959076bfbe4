// Package sopsmeta decodes a secret file with SOPS's own YAML store and
// checks the metadata as SOPS decoded it, the key groups of master keys it
// would use to recover the data key, before any of them is used.
// secretfile.Parse reads the same metadata from YAML nodes, strictly (no
// alias, anchor, merge key, explicit tag or repeated key, field names as
// SOPS spells them), and FuzzMetadataMatchesSOPS in internal/secretfile
// checks the two agree; this second look, with the library and types the
// decryption uses, is what the sync acts on. It lives apart from
// secretfile because it links SOPS and with it every key source's SDK,
// which the CMP's build (validate, render) leaves out.
package sopsmeta

import (
	"fmt"
	"sort"
	"strings"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/kms"
	"github.com/getsops/sops/v3/stores/yaml"

	"github.com/spokeforge/spokeforge/internal/secretfile"
)

// Load decodes data, a file secretfile.Parse accepted as f, with SOPS's
// YAML store and checks the decoded tree: every master key of every key
// group an age X25519 key or an AWS KMS key of a standard partition with
// no role and no profile (nothing else: no PGP, GCP KMS, Azure Key Vault or
// Vault key, none of a type SOPS may add later), exactly the recipients f
// reports; every value encrypted and covered by the MAC. Errors name the
// file and never a value or an address the file chose.
func Load(display string, data []byte, f *secretfile.File) (sops.Tree, error) {
	tree, err := yaml.NewStore(&config.YAMLStoreConfig{}).LoadEncryptedFile(data)
	if err != nil {
		return sops.Tree{}, fmt.Errorf("%s: not a SOPS file SOPS can read", display)
	}
	if err := Check(tree, f); err != nil {
		return sops.Tree{}, fmt.Errorf("%s: %w", display, err)
	}
	return tree, nil
}

// Check is Load's check of a decoded tree.
func Check(tree sops.Tree, f *secretfile.File) error {
	m := tree.Metadata
	if m.MACOnlyEncrypted {
		return fmt.Errorf("sops.mac_only_encrypted is not supported: the MAC must cover every value")
	}
	if m.EncryptedSuffix != "" || m.UnencryptedRegex != "" || m.EncryptedRegex != "" ||
		m.UnencryptedCommentRegex != "" || m.EncryptedCommentRegex != "" || m.UnencryptedSuffix == "" {
		return fmt.Errorf("its sops metadata sets a rule that leaves values unencrypted; only unencrypted_suffix is supported")
	}
	if len(m.KeyGroups) == 0 {
		return fmt.Errorf("names no age or AWS KMS recipient")
	}
	var ages, arns []string
	for gi, g := range m.KeyGroups {
		if len(g) == 0 {
			return fmt.Errorf("key group %d names no recipient", gi)
		}
		for _, k := range g {
			switch k := k.(type) {
			case *age.MasterKey:
				if !secretfile.ValidAgeRecipient(k.Recipient) {
					return fmt.Errorf("an age recipient is not an age X25519 public key")
				}
				ages = append(ages, k.Recipient)
			case *kms.MasterKey:
				switch {
				case k.Role != "":
					return fmt.Errorf("a KMS recipient names a role: not supported, the sync decrypts with the AWS SDK's default credential chain")
				case k.AwsProfile != "":
					return fmt.Errorf("a KMS recipient names an AWS profile: not supported, the sync decrypts with the AWS SDK's default credential chain")
				case !secretfile.ValidKMSARN(k.Arn):
					return fmt.Errorf("a KMS recipient is not an AWS KMS key or alias ARN")
				}
				for _, v := range k.EncryptionContext {
					if v == nil {
						// SOPS's key service dereferences it: a panic.
						return fmt.Errorf("a KMS recipient's context holds a null value")
					}
				}
				arns = append(arns, k.Arn)
			default:
				// The identifier is SOPS's constant for the key type ("hc_vault",
				// "azure_kv", ...), never a value of the file.
				return fmt.Errorf("%s recipients are not supported: spokeforge decrypts with age and AWS KMS only (docs/secrets.md)", keyType(k))
			}
		}
	}
	if n := len(ages) + len(arns); n > secretfile.MaxRecipients {
		return fmt.Errorf("names %d recipients; at most %d are accepted", n, secretfile.MaxRecipients)
	}
	if !same(ages, f.Age) || !same(arns, f.KMS) {
		return fmt.Errorf("SOPS reads other recipients from its metadata than the check did; the file was edited by hand")
	}
	keys := map[string]bool{}
	for _, b := range tree.Branches {
		for _, item := range b {
			k, ok := item.Key.(string)
			if !ok {
				continue // a comment
			}
			if strings.HasSuffix(k, m.UnencryptedSuffix) {
				return fmt.Errorf("a key ends with the file's unencrypted_suffix, so sops leaves its value unencrypted")
			}
			keys[k] = true
		}
	}
	want := map[string]bool{secretfile.BindingKey: true}
	for _, k := range f.Keys {
		want[k] = true
	}
	if len(keys) != len(want) {
		return fmt.Errorf("SOPS reads other keys from the file than the check did; the file was edited by hand")
	}
	for k := range want {
		if !keys[k] {
			return fmt.Errorf("SOPS reads other keys from the file than the check did; the file was edited by hand")
		}
	}
	return nil
}

// keyType names a master key's type by SOPS's identifier, bounded to the
// known ones.
func keyType(k interface{ TypeToIdentifier() string }) string {
	switch id := k.TypeToIdentifier(); id {
	case "pgp", "gcp_kms", "azure_kv", "hc_vault", "age", "kms":
		return id
	default:
		return fmt.Sprintf("%T", k)
	}
}

// same reports whether a and b hold the same strings, counted.
func same(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
