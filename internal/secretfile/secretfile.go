// Package secretfile reads the SOPS-encrypted secret files of a gitops repo,
// clusters/<cluster>/secrets/<name>.sops.yaml, without decrypting them: it
// checks that a file is a SOPS YAML file whose every value is encrypted,
// whose keys are valid Secret keys and whose recipients are age or AWS KMS
// only, and reports the key names. Whoever commits chooses every byte, so no
// finding repeats a value, a plaintext comment or anything that may be one.
// `spokeforge validate` and `spokeforge secrets sync` share it, so a file the
// sync would refuse never passes validation; decryption itself is
// internal/secrets' (this package stays free of the SOPS library, for the
// CMP's small build).
package secretfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"

	"github.com/spokeforge/spokeforge/internal/record"
)

// Layout of the secret files beside a cluster record (docs/secrets.md).
const (
	// Dir is the folder of a cluster's secret files, inside clusters/<cluster>/.
	Dir = "secrets"
	// Suffix ends every secret file name: <name>.sops.yaml.
	Suffix = ".sops.yaml"
	// MetadataKey is the top-level key SOPS keeps its metadata under.
	MetadataKey = "sops"
	// BindingKey is the key whose encrypted value binds a file to the one
	// secret it is for (Binding): SOPS authenticates the values and their
	// key paths but not the file's name, so without it a file copied from
	// another cluster's folder would decrypt that cluster's value into this
	// one's Secrets Manager path. It is not a Secret key ('/' is not allowed
	// in one), so it never collides with the secret's own keys, and it is
	// never written to Secrets Manager.
	BindingKey = "spokeforge.io/bound-to"
	// MaxFileBytes bounds one file: a Secrets Manager value stops at 64 KiB,
	// and its encrypted form (base64, per-value IV and tag) is larger.
	MaxFileBytes = 256 << 10
	// MaxFiles bounds the files of one cluster's secrets folder.
	MaxFiles = 1000
	// MaxRecipients bounds a file's recipients (age and KMS, key groups
	// included): SOPS tries each in turn, a KMS one over the network, and
	// cannot be interrupted while it does.
	MaxRecipients = 16
)

// Binding is the value BindingKey holds in the file of the secret name of
// cluster: "<cluster>/<name>".
func Binding(cluster, name string) string { return cluster + "/" + name }

// Path is the repo path of the file of the secret name of cluster.
func Path(cluster, name string) string {
	return "clusters/" + cluster + "/" + Dir + "/" + name + Suffix
}

// File is what a secret file says without decryption.
type File struct {
	// Keys are the secret's keys, sorted.
	Keys []string
	// Lines maps each key to its line.
	Lines map[string]int
	// Age and KMS are the recipients: age public keys and KMS key ARNs.
	Age, KMS []string
	// BindingLine is the line of BindingKey.
	BindingLine int
}

// encRE is the form SOPS writes an encrypted value in (AES-256-GCM: data,
// IV and tag in base64, and the original YAML type).
var encRE = regexp.MustCompile(`^ENC\[AES256_GCM,data:[A-Za-z0-9+/=]*,iv:[A-Za-z0-9+/=]+,tag:[A-Za-z0-9+/=]+,type:(str|int|float|bool)\]$`)

// encCommentRE is an encrypted comment (SOPS encrypts comments too).
var encCommentRE = regexp.MustCompile(`^#\s*ENC\[AES256_GCM,data:[A-Za-z0-9+/=]*,iv:[A-Za-z0-9+/=]+,tag:[A-Za-z0-9+/=]+,type:comment\]$`)

// Compiled on first use: their counted repetitions expand to hundreds of
// copies of a class, 2–5 ms at init (GODEBUG=inittrace=1) that every
// process linking this package, the CMP's render included, would pay.
var (
	ageRecipientRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^age1[02-9ac-hj-np-z]{58}$`) })
	kmsArnRE       = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^arn:aws(-cn|-us-gov)?:kms:[a-z]{2}(-gov)?-[a-z]+-\d{1,2}:\d{12}:(key/[0-9a-f-]{36}|alias/[A-Za-z0-9/_-]{1,250})$`)
	})
)

// metadataFields are the fields of the sops metadata this package accepts;
// recipients other than age and AWS KMS are refused because decrypting
// them would send the runner's credentials (a Vault token, an Azure token)
// to an address the file names.
var metadataFields = map[string]bool{
	"age": true, "kms": true, "key_groups": true, "shamir_threshold": true,
	"lastmodified": true, "mac": true, "version": true, "mac_only_encrypted": true,
	"unencrypted_suffix": true, "encrypted_suffix": true, "unencrypted_regex": true, "encrypted_regex": true,
	"unencrypted_comment_regex": true, "encrypted_comment_regex": true,
	// Older SOPS versions write these as empty lists; any entry is refused.
	"gcp_kms": true, "azure_kv": true, "hc_vault": true, "pgp": true,
}

type parser struct {
	file string
	errs record.Errors
	out  *File
}

func (p *parser) fail(line int, path, format string, args ...any) {
	p.errs = append(p.errs, record.Error{File: p.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Parse checks one secret file (display names it in findings) and returns
// its key names and recipients.
func Parse(display string, data []byte) (*File, record.Errors) {
	p := &parser{file: display, out: &File{Lines: map[string]int{}}}
	if len(data) > MaxFileBytes {
		p.fail(0, "", "is %d bytes; at most %d are read", len(data), MaxFileBytes)
		return nil, p.errs
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			p.fail(0, "", "is empty; encrypt it with sops --encrypt (docs/secrets.md)")
		} else {
			// Only the line: yaml.v3's messages can quote the file (an unknown
			// alias is named), and the file holds a secret.
			p.fail(record.YAMLErrLine(err), "", "is not valid YAML")
		}
		return nil, p.errs
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		p.fail(next.Line, "", "holds more than one YAML document; a secret file holds exactly one")
		return nil, p.errs
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		p.fail(0, "", "must be a YAML mapping of key names to encrypted values")
		return nil, p.errs
	}
	doc := root.Content[0]
	p.comments(&root)
	var meta *yaml.Node
	seen := map[string]bool{}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			p.fail(k.Line, "", "keys must be strings (line %d)", k.Line)
			continue
		}
		if seen[k.Value] {
			p.fail(k.Line, "", "duplicate key at line %d", k.Line)
			continue
		}
		seen[k.Value] = true
		if k.Value == MetadataKey {
			meta = v
			continue
		}
		if k.Value == BindingKey {
			if v.Kind != yaml.ScalarNode || !encRE.MatchString(v.Value) {
				p.fail(v.Line, BindingKey, "must be a single encrypted value (encrypt the file with sops --encrypt)")
			}
			p.out.BindingLine = k.Line
			continue
		}
		p.value(k, v)
	}
	if meta == nil {
		p.fail(0, "", "is not encrypted: it has no sops metadata; encrypt it with sops --encrypt (docs/secrets.md)")
	} else {
		p.metadata(meta)
	}
	if len(p.out.Keys) == 0 && len(p.errs) == 0 {
		p.fail(0, "", "holds no keys")
	}
	if p.out.BindingLine == 0 && len(p.errs) == 0 {
		p.fail(0, "", "has no %s key: before encrypting, add the line \"%s: <cluster>/<secret name>\" (docs/secrets.md); it binds the file to that one secret", BindingKey, BindingKey)
	}
	sort.Strings(p.out.Keys)
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return p.out, nil
}

// value checks one secret key and its value, naming the key only when it
// is printable text (a key is a name, not a secret, but a hostile file may
// put anything there).
func (p *parser) value(k, v *yaml.Node) {
	name := k.Value
	printable := true
	if _, _, bad := record.ControlChar(name); bad || len(name) > 253 {
		printable = false
	}
	where := fmt.Sprintf("key at line %d", k.Line)
	if printable {
		where = fmt.Sprintf("key %q", name)
	}
	if !printable || len(k8svalidation.IsConfigMapKey(name)) > 0 {
		p.fail(k.Line, "", "%s is not a Secret key (letters, digits, '-', '_' and '.', at most 253)", where)
		return
	}
	switch {
	case v.Kind == yaml.AliasNode:
		p.fail(v.Line, name, "YAML aliases are not allowed")
	case v.Kind != yaml.ScalarNode:
		p.fail(v.Line, name, "must be a single encrypted value, not a list or mapping (a secret's keys are flat)")
	case !encRE.MatchString(v.Value):
		p.fail(v.Line, name, "is not encrypted (value not repeated): encrypt the file with sops --encrypt, never commit a plaintext value, and rotate the secret if it was pushed")
	default:
		p.out.Keys = append(p.out.Keys, name)
		p.out.Lines[name] = k.Line
	}
}

// comments refuses plaintext comments anywhere: SOPS encrypts comments, so
// a plaintext one was added by hand and may hold what it should not.
func (p *parser) comments(n *yaml.Node) {
	for _, c := range []string{n.HeadComment, n.LineComment, n.FootComment} {
		for _, line := range strings.Split(c, "\n") {
			line = strings.TrimSpace(line)
			if line != "" && !encCommentRE.MatchString(line) {
				p.fail(n.Line, "", "holds a plaintext comment near line %d (not repeated); comments are encrypted by sops: edit the file with sops", n.Line)
				return
			}
		}
	}
	for _, c := range n.Content {
		p.comments(c)
	}
}

func (p *parser) metadata(m *yaml.Node) {
	const path = MetadataKey
	if m.Kind != yaml.MappingNode {
		p.fail(m.Line, path, "must be a mapping (the SOPS metadata)")
		return
	}
	has := map[string]bool{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		f := k.Value
		if !metadataFields[f] {
			if _, _, bad := record.ControlChar(f); bad || len(f) > 64 {
				f = fmt.Sprintf("at line %d", k.Line)
			}
			p.fail(k.Line, path, "unknown SOPS metadata field %s (a SOPS version newer than this spokeforge knows, or an edited file)", f)
			continue
		}
		has[f] = true
		switch f {
		case "age", "kms":
			p.recipients(f, path+"."+f, v)
		case "key_groups":
			if v.Kind != yaml.SequenceNode {
				p.fail(v.Line, path+".key_groups", "must be a list")
				continue
			}
			for gi, g := range v.Content {
				gp := fmt.Sprintf("%s.key_groups[%d]", path, gi)
				if g.Kind != yaml.MappingNode {
					p.fail(g.Line, gp, "must be a mapping of recipients")
					continue
				}
				for j := 0; j+1 < len(g.Content); j += 2 {
					gk, gv := g.Content[j], g.Content[j+1]
					switch gk.Value {
					case "age", "kms":
						p.recipients(gk.Value, gp+"."+gk.Value, gv)
					default:
						p.emptyOnly(gp, gk, gv)
					}
				}
			}
		case "gcp_kms", "azure_kv", "hc_vault", "pgp":
			p.emptyOnly(path, k, v)
		case "mac":
			if v.Kind != yaml.ScalarNode || !encRE.MatchString(v.Value) {
				p.fail(v.Line, path+".mac", "is not an encrypted MAC; the file was not written by sops")
			}
		}
	}
	for _, req := range []string{"mac", "lastmodified"} {
		if !has[req] {
			p.fail(m.Line, path, "lacks %s; the file was not written by sops", req)
		}
	}
	switch n := len(p.out.Age) + len(p.out.KMS); {
	case n == 0:
		p.fail(m.Line, path, "names no age or AWS KMS recipient")
	case n > MaxRecipients:
		p.fail(m.Line, path, "names %d recipients; at most %d are accepted", n, MaxRecipients)
	}
}

// emptyOnly accepts a recipient list of a refused kind only when empty.
func (p *parser) emptyOnly(path string, k, v *yaml.Node) {
	if v.Kind == yaml.SequenceNode && len(v.Content) == 0 || v.Tag == "!!null" {
		return
	}
	name := k.Value
	if _, _, bad := record.ControlChar(name); bad || len(name) > 64 {
		name = "a recipient kind"
	}
	p.fail(k.Line, path, "%s recipients are not supported: spokeforge decrypts with age and AWS KMS only (docs/secrets.md)", name)
}

func (p *parser) recipients(kind, path string, v *yaml.Node) {
	if v.Kind != yaml.SequenceNode {
		p.fail(v.Line, path, "must be a list")
		return
	}
	for i, e := range v.Content {
		ep := fmt.Sprintf("%s[%d]", path, i)
		if e.Kind != yaml.MappingNode {
			p.fail(e.Line, ep, "must be a mapping")
			continue
		}
		fields := map[string]*yaml.Node{}
		for j := 0; j+1 < len(e.Content); j += 2 {
			fields[e.Content[j].Value] = e.Content[j+1]
		}
		str := func(f string) string {
			if n := fields[f]; n != nil && n.Kind == yaml.ScalarNode {
				return n.Value
			}
			return ""
		}
		if n := fields["enc"]; n == nil || n.Kind != yaml.ScalarNode || n.Value == "" {
			p.fail(e.Line, ep+".enc", "required: the encrypted data key")
		}
		switch kind {
		case "age":
			for f := range fields {
				if f != "recipient" && f != "enc" {
					p.fail(e.Line, ep, "unknown age recipient field at line %d", e.Line)
				}
			}
			r := str("recipient")
			if !ageRecipientRE().MatchString(r) {
				p.fail(e.Line, ep+".recipient", "is not an age X25519 public key (age1...)")
				continue
			}
			p.out.Age = append(p.out.Age, r)
		case "kms":
			for f := range fields {
				switch f {
				case "arn", "enc", "created_at", "context":
				case "aws_profile", "role":
					// A profile would pick credentials of the machine the sync runs on;
					// a role would be assumed with the sync's credentials, in any account
					// the file names.
					if str(f) != "" {
						p.fail(e.Line, ep+"."+f, "is not supported: the sync decrypts with the AWS SDK's default credential chain, which needs kms:Decrypt on the key")
					}
				default:
					p.fail(e.Line, ep, "unknown KMS recipient field at line %d", e.Line)
				}
			}
			arn := str("arn")
			if !kmsArnRE().MatchString(arn) {
				p.fail(e.Line, ep+".arn", "is not an AWS KMS key or alias ARN")
				continue
			}
			p.out.KMS = append(p.out.KMS, arn)
		}
	}
}
