// Package secretfile reads the SOPS-encrypted secret files of a gitops repo,
// clusters/<cluster>/secrets/<name>.sops.yaml, without decrypting them: it
// checks that a file is a SOPS YAML file whose every value is encrypted,
// whose keys are valid Secret keys and whose recipients are age or AWS KMS
// only, and reports the key names. Whoever commits chooses every byte, so no
// finding repeats a value, a plaintext comment or anything that may be one.
// `spokeforge validate` and `spokeforge secrets sync` share it, so a file the
// sync would refuse never passes validation; decryption itself is
// internal/secrets' (this package stays free of the SOPS library, for the
// CMP's small build; internal/secretfile/sopsmeta checks the metadata again
// as SOPS's own store decodes it, before the sync uses a key).
package secretfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
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

// DefaultUnencryptedSuffix is the rule SOPS applies when a file's metadata
// names none: a key ending with it is left unencrypted.
const DefaultUnencryptedSuffix = "_unencrypted"

// ValidAgeRecipient reports whether r is an age X25519 public key, the only
// age recipient accepted (no plugin or SSH recipients).
func ValidAgeRecipient(r string) bool { return ageRecipientRE().MatchString(r) }

// ValidKMSARN reports whether arn is an AWS KMS key or alias ARN of a
// standard partition: its region names the endpoint the AWS SDK resolves
// (kms.<region>.amazonaws.com, or the runner's AWS_ENDPOINT_URL), so no
// other host can be reached through it.
func ValidKMSARN(arn string) bool { return kmsArnRE().MatchString(arn) }

// The fields of SOPS v3's stores.Metadata, keygroup and key structs, which
// SOPS decodes with yaml.v3 by exact name; metaKinds says what node each
// must be. A field not listed is refused: SOPS would ignore it, so it can
// only be a mistake or an attempt to make this check read the file
// differently from SOPS (a "Role:" spelled in another case, say).
type fieldKind int

const (
	fString fieldKind = iota
	fInt
	fBool
	fList
	fMapping
)

var metaKinds = map[string]fieldKind{
	"shamir_threshold": fInt, "key_groups": fList, "kms": fList, "gcp_kms": fList,
	"azure_kv": fList, "hc_vault": fList, "age": fList, "lastmodified": fString,
	"mac": fString, "pgp": fList, "unencrypted_suffix": fString, "encrypted_suffix": fString,
	"unencrypted_regex": fString, "encrypted_regex": fString,
	"unencrypted_comment_regex": fString, "encrypted_comment_regex": fString,
	"mac_only_encrypted": fBool, "version": fString,
}

// groupKinds: a key group holds recipient lists only.
var groupKinds = map[string]fieldKind{
	"pgp": fList, "kms": fList, "gcp_kms": fList, "azure_kv": fList, "hc_vault": fList, "age": fList,
}

var (
	ageKinds = map[string]fieldKind{"recipient": fString, "enc": fString}
	kmsKinds = map[string]fieldKind{
		"arn": fString, "role": fString, "context": fMapping, "created_at": fString,
		"enc": fString, "aws_profile": fString,
	}
)

// cryptRules are the metadata fields that choose which values SOPS leaves
// unencrypted; only unencrypted_suffix, SOPS's default, is accepted.
var cryptRules = []string{"unencrypted_suffix", "encrypted_suffix", "unencrypted_regex", "encrypted_regex", "unencrypted_comment_regex", "encrypted_comment_regex"}

// refusedKinds are the recipient kinds spokeforge does not decrypt with:
// each would send a credential of the runner (a Vault token, an Azure or
// Google token) to an address the file names, or run gpg. Older SOPS
// versions write them as empty lists, which are accepted.
var refusedKinds = []string{"gcp_kms", "azure_kv", "hc_vault", "pgp"}

type parser struct {
	file string
	errs record.Errors
	out  *File
	// suffix is the unencrypted suffix SOPS applies to this file.
	suffix string
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
	// What the nodes show must be what yaml.v3 hands SOPS: no alias, anchor,
	// merge key, explicit tag or repeated key anywhere, data included.
	if p.strict(&root, 0); len(p.errs) > 0 {
		return nil, p.errs
	}
	doc := root.Content[0]
	p.comments(&root)
	var meta *yaml.Node
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if k := doc.Content[i]; k.Kind == yaml.ScalarNode && k.Tag == "!!str" && k.Value == MetadataKey {
			meta = doc.Content[i+1]
		}
	}
	if meta == nil {
		p.fail(0, "", "is not encrypted: it has no sops metadata; encrypt it with sops --encrypt (docs/secrets.md)")
	} else {
		p.metadata(meta)
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			p.fail(k.Line, "", "keys must be strings (line %d)", k.Line)
			continue
		}
		if k.Value == MetadataKey {
			continue
		}
		if k.Value == BindingKey {
			if v.Kind != yaml.ScalarNode || !encRE.MatchString(v.Value) {
				p.fail(v.Line, BindingKey, "must be a single encrypted value (encrypt the file with sops --encrypt)")
			} else if p.unencrypted(BindingKey) {
				p.fail(k.Line, BindingKey, "ends with the file's unencrypted_suffix, so sops would not decrypt it; re-encrypt the file without that rule")
			}
			p.out.BindingLine = k.Line
			continue
		}
		p.value(k, v)
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

// unencrypted reports whether SOPS leaves the value of the top-level key k
// unencrypted under the file's rule (the unencrypted suffix; the other
// rules are refused in the metadata).
func (p *parser) unencrypted(k string) bool {
	return p.suffix != "" && strings.HasSuffix(k, p.suffix)
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
	case v.Kind != yaml.ScalarNode:
		p.fail(v.Line, name, "must be a single encrypted value, not a list or mapping (a secret's keys are flat)")
	case !encRE.MatchString(v.Value):
		p.fail(v.Line, name, "is not encrypted (value not repeated): encrypt the file with sops --encrypt, never commit a plaintext value, and rotate the secret if it was pushed")
	case p.unencrypted(name):
		// SOPS would hand this value back as it is written, not decrypted.
		p.fail(k.Line, name, "ends with the file's unencrypted_suffix, so sops leaves its value unencrypted: rename the key")
	default:
		p.out.Keys = append(p.out.Keys, name)
		p.out.Lines[name] = k.Line
	}
}

// maxStrictFindings bounds the findings strict adds, so a hostile file of
// thousands of aliases does not make a report of thousands of lines.
const maxStrictFindings = 10

// strict refuses, anywhere in the document, the YAML features through which
// yaml.v3 decodes into SOPS's structs something other than the nodes this
// package reads: an alias or a merge key (<<) brings in a mapping or a
// list from elsewhere, an anchor is only there for them, an explicit tag
// changes how a value is decoded (!!null on a list still yields the list;
// !!binary decodes base64), and a repeated key is either an error or a
// second value. SOPS itself writes none of them.
func (p *parser) strict(n *yaml.Node, depth int) {
	if len(p.errs) >= maxStrictFindings {
		return
	}
	const why = "sops never writes them, and the SOPS library would read through them what this check cannot see"
	switch {
	case n.Kind == yaml.AliasNode:
		p.fail(n.Line, "", "YAML aliases are not allowed in a secret file (line %d): %s", n.Line, why)
		return
	case n.Anchor != "":
		p.fail(n.Line, "", "YAML anchors are not allowed in a secret file (line %d): %s", n.Line, why)
	case n.Style&yaml.TaggedStyle != 0:
		p.fail(n.Line, "", "explicit YAML tags are not allowed in a secret file (line %d): %s", n.Line, why)
	}
	if n.Kind == yaml.MappingNode {
		type key struct {
			kind  yaml.Kind
			value string
		}
		seen := map[key]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Tag == "!!merge" {
				p.fail(k.Line, "", "YAML merge keys (<<) are not allowed in a secret file (line %d): %s", k.Line, why)
			}
			if kk := (key{k.Kind, k.Value}); seen[kk] {
				p.fail(k.Line, "", "duplicate key at line %d", k.Line)
			} else {
				seen[kk] = true
			}
		}
	}
	for _, c := range n.Content {
		p.strict(c, depth+1)
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

// fields reads mapping m (at path) as yaml.v3 would decode it into a SOPS
// struct whose fields are kinds: every key a plain string naming a field,
// every value of the field's kind. It returns the values by field name and
// false if any finding was added. Unknown field names are refused and are
// named only when they are short printable text; a name that differs from
// a field only in case is refused as such (yaml.v3 matches field names
// exactly, so SOPS would ignore it).
func (p *parser) fields(path string, m *yaml.Node, kinds map[string]fieldKind) (map[string]*yaml.Node, bool) {
	if m.Kind != yaml.MappingNode {
		p.fail(m.Line, path, "must be a mapping")
		return nil, false
	}
	ok := true
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		kind, known := kinds[k.Value]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" || !known {
			ok = false
			name := fmt.Sprintf("at line %d", k.Line)
			if _, _, bad := record.ControlChar(k.Value); !bad && len(k.Value) <= 64 && k.Kind == yaml.ScalarNode {
				name = strconv.Quote(k.Value)
			}
			for f := range kinds {
				if strings.EqualFold(f, k.Value) && f != k.Value {
					p.fail(k.Line, path, "field %s is %q in another case: SOPS matches field names exactly and would ignore it; write it as sops does", name, f)
					name = ""
					break
				}
			}
			if name != "" {
				p.fail(k.Line, path, "unknown SOPS metadata field %s (a SOPS version newer than this spokeforge knows, or an edited file)", name)
			}
			continue
		}
		fp := path + "." + k.Value
		if !p.kind(fp, v, kind) {
			ok = false
			continue
		}
		out[k.Value] = v
	}
	return out, ok
}

// kind checks that v is what yaml.v3 decodes into a field of kind without
// error: a null is the zero value of any kind.
func (p *parser) kind(path string, v *yaml.Node, kind fieldKind) bool {
	if isNull(v) {
		return true
	}
	var good bool
	switch kind {
	case fString:
		good = v.Kind == yaml.ScalarNode
	case fInt:
		good = v.Kind == yaml.ScalarNode && v.Tag == "!!int"
	case fBool:
		good = v.Kind == yaml.ScalarNode && v.Tag == "!!bool"
	case fList:
		good = v.Kind == yaml.SequenceNode
	case fMapping:
		good = v.Kind == yaml.MappingNode
	}
	if !good {
		p.fail(v.Line, path, "must be %s", map[fieldKind]string{fString: "a string", fInt: "an integer", fBool: "true or false", fList: "a list", fMapping: "a mapping"}[kind])
	}
	return good
}

// isNull: a plain null scalar ("", ~, null), which yaml.v3 decodes into
// the zero value (explicit tags are refused before).
func isNull(v *yaml.Node) bool { return v.Kind == yaml.ScalarNode && v.Tag == "!!null" }

// str is the string yaml.v3 decodes a scalar into ("" for a null).
func str(v *yaml.Node) string {
	if v == nil || isNull(v) {
		return ""
	}
	return v.Value
}

func (p *parser) metadata(m *yaml.Node) {
	const path = MetadataKey
	if m.Kind != yaml.MappingNode {
		p.fail(m.Line, path, "must be a mapping (the SOPS metadata)")
		return
	}
	f, _ := p.fields(path, m, metaKinds)
	for _, req := range []string{"mac", "lastmodified"} {
		if f[req] == nil {
			p.fail(m.Line, path, "lacks %s; the file was not written by sops", req)
		}
	}
	if v := f["mac"]; v != nil && !encRE.MatchString(str(v)) {
		p.fail(v.Line, path+".mac", "is not an encrypted MAC; the file was not written by sops")
	}
	if v := f["mac_only_encrypted"]; v != nil && !isNull(v) && !strings.EqualFold(v.Value, "false") {
		p.fail(v.Line, path+".mac_only_encrypted", "is not supported: the MAC must cover every value (re-encrypt without mac_only_encrypted)")
	}
	if v := f["shamir_threshold"]; v != nil && strings.HasPrefix(v.Value, "-") {
		p.fail(v.Line, path+".shamir_threshold", "must not be negative")
	}
	// Which values SOPS leaves unencrypted: ToInternal applies the default
	// suffix when no rule is set, and only that rule is accepted.
	p.suffix = DefaultUnencryptedSuffix
	for _, r := range cryptRules {
		v := f[r]
		if str(v) == "" {
			continue
		}
		if r != "unencrypted_suffix" {
			p.fail(v.Line, path+"."+r, "is not supported: spokeforge needs every value encrypted; drop it from the creation rule in .sops.yaml and re-encrypt the file")
			continue
		}
		p.suffix = str(v)
	}
	// SOPS reads the top-level recipient lists if any is non-empty, and
	// key_groups only otherwise; a file with both would be checked for
	// recipients SOPS never uses.
	flat := false
	for _, kind := range append([]string{"age", "kms"}, refusedKinds...) {
		if v := f[kind]; v != nil && len(v.Content) > 0 {
			flat = true
		}
	}
	if g := f["key_groups"]; flat && g != nil && len(g.Content) > 0 {
		p.fail(g.Line, path+".key_groups", "is not allowed beside top-level recipient lists: sops writes one or the other and reads only the lists")
		return
	}
	if flat {
		p.group(path, f)
	} else if g := f["key_groups"]; g != nil {
		for gi, gn := range g.Content {
			gp := fmt.Sprintf("%s.key_groups[%d]", path, gi)
			gf, ok := p.fields(gp, gn, groupKinds)
			if ok && p.group(gp, gf) == 0 {
				p.fail(gn.Line, gp, "names no age or AWS KMS recipient")
			}
		}
	}
	switch n := len(p.out.Age) + len(p.out.KMS); {
	case n == 0:
		p.fail(m.Line, path, "names no age or AWS KMS recipient")
	case n > MaxRecipients:
		p.fail(m.Line, path, "names %d recipients; at most %d are accepted", n, MaxRecipients)
	}
}

// group checks the recipient lists of one key group (or of the top level)
// and returns how many recipients it adds.
func (p *parser) group(path string, f map[string]*yaml.Node) int {
	before := len(p.out.Age) + len(p.out.KMS)
	for _, kind := range refusedKinds {
		if v := f[kind]; v != nil && len(v.Content) > 0 {
			p.fail(v.Line, path, "%s recipients are not supported: spokeforge decrypts with age and AWS KMS only (docs/secrets.md)", kind)
		}
	}
	for _, kind := range []string{"age", "kms"} {
		if v := f[kind]; v != nil {
			p.recipients(kind, path+"."+kind, v)
		}
	}
	return len(p.out.Age) + len(p.out.KMS) - before
}

func (p *parser) recipients(kind, path string, v *yaml.Node) {
	kinds := ageKinds
	if kind == "kms" {
		kinds = kmsKinds
	}
	for i, e := range v.Content {
		ep := fmt.Sprintf("%s[%d]", path, i)
		fields, ok := p.fields(ep, e, kinds)
		if !ok {
			continue
		}
		if str(fields["enc"]) == "" {
			p.fail(e.Line, ep+".enc", "required: the encrypted data key")
		}
		switch kind {
		case "age":
			r := str(fields["recipient"])
			if !ValidAgeRecipient(r) {
				p.fail(e.Line, ep+".recipient", "is not an age X25519 public key (age1...)")
				continue
			}
			p.out.Age = append(p.out.Age, r)
		case "kms":
			bad := false
			for _, f := range []string{"aws_profile", "role"} {
				// A profile would pick credentials of the machine the sync runs on;
				// a role would be assumed with the sync's credentials, in any account
				// the file names.
				if str(fields[f]) != "" {
					bad = true
					p.fail(e.Line, ep+"."+f, "is not supported: the sync decrypts with the AWS SDK's default credential chain, which needs kms:Decrypt on the key")
				}
			}
			if c := fields["context"]; c != nil && !isNull(c) {
				// The encryption context is sent with the Decrypt call and chooses no
				// endpoint or credential; it must be a flat map of strings. A null
				// value would be a nil *string, which SOPS's key service dereferences
				// (a panic that would stop the whole sync).
				for j := 0; j+1 < len(c.Content); j += 2 {
					ck, cv := c.Content[j], c.Content[j+1]
					if ck.Kind != yaml.ScalarNode || cv.Kind != yaml.ScalarNode || isNull(ck) || isNull(cv) {
						bad = true
						p.fail(c.Line, ep+".context", "must map strings to strings (no null)")
						break
					}
				}
			}
			arn := str(fields["arn"])
			if !ValidKMSARN(arn) {
				p.fail(e.Line, ep+".arn", "is not an AWS KMS key or alias ARN")
				continue
			}
			if !bad {
				p.out.KMS = append(p.out.KMS, arn)
			}
		}
	}
}
