package sopstest

import (
	"strings"
	"testing"

	"github.com/getsops/sops/v3/aes"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/stores/yaml"

	"github.com/spokeforge/spokeforge/internal/awsfake"
	"github.com/spokeforge/spokeforge/internal/secretfile"
)

// A file encrypted to a KMS key of the fake is a secret file spokeforge
// accepts, and SOPS decrypts it through the same fake.
func TestEncryptKMSThroughTheFake(t *testing.T) {
	f := awsfake.New("111122223333", "us-east-1")
	url, err := f.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.StaticKey("AKIASOPS", "arn:aws:iam::111122223333:role/sops")
	arn := f.NewKMSKey()

	if _, err := EncryptKMS(map[string]string{"token": "v"}, nil, arn); err == nil || !strings.Contains(err.Error(), "UseFakeKMS") {
		t.Fatalf("without UseFakeKMS: %v", err)
	}
	UseFakeKMS(t, url, "AKIASOPS")
	b, err := EncryptKMS(map[string]string{"token": "value-kms-1", secretfile.BindingKey: "gpu-east-1/s"}, map[string]string{"cluster": "gpu-east-1"}, arn)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "value-kms-1") || !strings.Contains(string(b), "cluster: gpu-east-1") || f.Calls("kms.Encrypt") != 1 {
		t.Fatalf("file (%d Encrypt calls):\n%s", f.Calls("kms.Encrypt"), b)
	}
	sf, errs := secretfile.Parse("s.sops.yaml", b)
	if len(errs) > 0 || len(sf.KMS) != 1 || sf.KMS[0] != arn || len(sf.Age) != 0 {
		t.Fatalf("Parse = %+v, %v", sf, errs)
	}
	tree, err := yaml.NewStore(&config.YAMLStoreConfig{}).LoadEncryptedFile(b)
	if err != nil {
		t.Fatal(err)
	}
	key, err := tree.Metadata.GetDataKey()
	if err != nil || f.Calls("kms.Decrypt") != 1 {
		t.Fatalf("data key: %v (%d Decrypt calls)", err, f.Calls("kms.Decrypt"))
	}
	if _, err := tree.Decrypt(key, aes.NewCipher()); err != nil || tree.Branches[0][1].Value != "value-kms-1" {
		t.Fatalf("decrypt: %v %v", tree.Branches[0][0], err)
	}
}
