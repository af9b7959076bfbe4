package secrets

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	"github.com/getsops/sops/v3/keyservice"

	"github.com/spokeforge/spokeforge/internal/secretfile"
	"github.com/spokeforge/spokeforge/internal/secretfile/sopsmeta"
)

// Decrypt checks a secret file (secretfile.Parse: SOPS YAML, every value
// encrypted, age or KMS recipients only), decodes it with SOPS's YAML store
// and checks the master keys SOPS decoded (sopsmeta.Load), then decrypts it
// with the SOPS library, verifying its MAC. Errors name the file and say
// why, never what a value is: SOPS's own messages are used only where they
// cannot carry plaintext (the data key step names recipients and
// key-service errors).
//
// Only the checked master keys are used, through the in-process key
// service alone (no remote keyservice): an age key is opened with the
// runner's identity, a KMS key with the AWS SDK's default credential chain
// at the endpoint the SDK resolves for the ARN's region (or the runner's
// AWS_ENDPOINT_URL); no field of the file names a host, a role or a
// profile, so no credential of the runner goes where a file chose.
func Decrypt(display string, data []byte) (map[string]string, error) {
	f, errs := secretfile.Parse(display, data)
	if len(errs) > 0 {
		return nil, errs
	}
	tree, err := sopsmeta.Load(display, data, f)
	if err != nil {
		return nil, err
	}
	key, err := tree.Metadata.GetDataKeyWithKeyServices([]keyservice.KeyServiceClient{keyservice.NewLocalClient()}, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: no key at hand decrypts its data key (it is encrypted to %s): give the sync an age identity of one of them (SOPS_AGE_KEY_FILE or SOPS_AGE_KEY) or AWS credentials allowed kms:Decrypt",
			display, recipients(f))
	}
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(key, cipher)
	if err != nil {
		return nil, fmt.Errorf("%s: a value cannot be decrypted: the file is damaged or was edited without sops", display)
	}
	stored, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, key, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil || stored != mac {
		return nil, fmt.Errorf("%s: integrity check failed (MAC mismatch): the file was edited without sops", display)
	}
	out := map[string]string{}
	for _, branch := range tree.Branches {
		for _, item := range branch {
			k, ok := item.Key.(string)
			if !ok || k == secretfile.MetadataKey {
				continue
			}
			switch v := item.Value.(type) {
			case string:
				out[k] = v
			case int:
				out[k] = strconv.Itoa(v)
			case float64:
				out[k] = strconv.FormatFloat(v, 'g', -1, 64)
			case bool:
				out[k] = strconv.FormatBool(v)
			case sops.Comment:
			default:
				return nil, fmt.Errorf("%s: key %q: a value must be a string, number or boolean", display, k)
			}
		}
	}
	return out, nil
}

// recipients lists a file's recipients for an error.
func recipients(f *secretfile.File) string {
	var parts []string
	for _, r := range f.Age {
		parts = append(parts, "age "+r)
	}
	for _, r := range f.KMS {
		parts = append(parts, "KMS "+r)
	}
	return strings.Join(parts, ", ")
}

// firstLine keeps the head of a multi-line SOPS error, bounded.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "") + "..."
	}
	return s
}
