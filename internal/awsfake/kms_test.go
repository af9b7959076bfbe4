package awsfake

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/smithy-go"
)

func kmsClient(f *Server, akid string) *kms.Client {
	return kms.New(kms.Options{Region: "us-east-1", BaseEndpoint: aws.String(f.URL()), Retryer: aws.NopRetryer{},
		Credentials: credentials.NewStaticCredentialsProvider(akid, "s", "")})
}

// Encrypt and Decrypt, through the real SDK client, answer as the KMS API
// reference says for the calls SOPS's KMS key source makes.
func TestKMSFollowsTheAPIReference(t *testing.T) {
	f := New("111122223333", "us-east-1")
	if _, err := f.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.StaticKey("AKIATEST", "arn:aws:iam::111122223333:role/gitops-sync")
	keyA := "arn:aws:kms:us-east-1:111122223333:key/0c5d6a3e-1f2b-4c8d-9e0f-1a2b3c4d5e6f"
	f.AddKMSKey(keyA)
	keyB := f.NewKMSKey()
	c := kmsClient(f, "AKIATEST")
	ctx := context.Background()
	plain := []byte("data-key-0123456789abcdef0123456")
	encCtx := map[string]string{"team": "ml", "env": "prod"}

	// By key id: the answer names the key ARN; the blob is not the plaintext.
	enc, err := c.Encrypt(ctx, &kms.EncryptInput{KeyId: aws.String("0c5d6a3e-1f2b-4c8d-9e0f-1a2b3c4d5e6f"), Plaintext: plain, EncryptionContext: encCtx})
	if err != nil || aws.ToString(enc.KeyId) != keyA || enc.EncryptionAlgorithm != kmstypes.EncryptionAlgorithmSpecSymmetricDefault {
		t.Fatalf("Encrypt = %+v, %v", enc, err)
	}
	if bytes.Contains(enc.CiphertextBlob, plain) {
		t.Fatal("the ciphertext holds the plaintext")
	}
	again, err := c.Encrypt(ctx, &kms.EncryptInput{KeyId: aws.String(keyA), Plaintext: plain, EncryptionContext: encCtx})
	if err != nil || bytes.Equal(again.CiphertextBlob, enc.CiphertextBlob) {
		t.Fatalf("a second Encrypt must use a fresh nonce: %v", err)
	}
	// With or without KeyId (a symmetric blob names its key); the context's order does not matter.
	for _, id := range []*string{aws.String(keyA), nil} {
		dec, err := c.Decrypt(ctx, &kms.DecryptInput{KeyId: id, CiphertextBlob: enc.CiphertextBlob, EncryptionContext: map[string]string{"env": "prod", "team": "ml"}})
		if err != nil || !bytes.Equal(dec.Plaintext, plain) || aws.ToString(dec.KeyId) != keyA {
			t.Fatalf("Decrypt (KeyId %v) = %+v, %v", aws.ToString(id), dec, err)
		}
	}

	tampered := bytes.Clone(enc.CiphertextBlob)
	tampered[len(tampered)-1] ^= 1
	missing := "arn:aws:kms:us-east-1:111122223333:key/99999999-9999-4999-8999-999999999999"
	for _, tc := range []struct {
		name    string
		in      kms.DecryptInput
		code    string
		message string
	}{
		{"another context value", kms.DecryptInput{KeyId: aws.String(keyA), CiphertextBlob: enc.CiphertextBlob, EncryptionContext: map[string]string{"team": "ml", "env": "dev"}}, "InvalidCiphertextException", ""},
		{"a context key less", kms.DecryptInput{KeyId: aws.String(keyA), CiphertextBlob: enc.CiphertextBlob, EncryptionContext: map[string]string{"team": "ml"}}, "InvalidCiphertextException", ""},
		{"a context key more", kms.DecryptInput{KeyId: aws.String(keyA), CiphertextBlob: enc.CiphertextBlob, EncryptionContext: map[string]string{"team": "ml", "env": "prod", "x": "y"}}, "InvalidCiphertextException", ""},
		{"no context", kms.DecryptInput{KeyId: aws.String(keyA), CiphertextBlob: enc.CiphertextBlob}, "InvalidCiphertextException", ""},
		{"tampered blob", kms.DecryptInput{KeyId: aws.String(keyA), CiphertextBlob: tampered, EncryptionContext: encCtx}, "InvalidCiphertextException", ""},
		{"not a blob", kms.DecryptInput{CiphertextBlob: []byte("AQICAHh0")}, "InvalidCiphertextException", ""},
		{"another key", kms.DecryptInput{KeyId: aws.String(keyB), CiphertextBlob: enc.CiphertextBlob, EncryptionContext: encCtx}, "IncorrectKeyException",
			"The key ID in the request does not identify a KMS key that can perform this operation."},
		{"unknown key", kms.DecryptInput{KeyId: aws.String(missing), CiphertextBlob: enc.CiphertextBlob, EncryptionContext: encCtx}, "NotFoundException", "Key '" + missing + "' does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := c.Decrypt(ctx, &tc.in)
			if code(err) != tc.code || out != nil {
				t.Fatalf("Decrypt = %+v, %v; want %s", out, err, tc.code)
			}
			var api interface{ ErrorMessage() string }
			if errors.As(err, &api) && api.ErrorMessage() != tc.message {
				t.Fatalf("message %q, want %q", api.ErrorMessage(), tc.message)
			}
			if strings.Contains(err.Error(), string(plain)) {
				t.Fatalf("the error holds the plaintext: %v", err)
			}
		})
	}

	var nf *kmstypes.NotFoundException
	if _, err := c.Encrypt(ctx, &kms.EncryptInput{KeyId: aws.String(missing), Plaintext: plain}); !errors.As(err, &nf) || nf.ErrorMessage() != "Key '"+missing+"' does not exist" {
		t.Fatalf("Encrypt to an unknown key: %v", err)
	}
	if _, err := c.Encrypt(ctx, &kms.EncryptInput{KeyId: aws.String("alias/gitops"), Plaintext: plain}); !errors.As(err, &nf) {
		t.Fatalf("Encrypt to an unknown alias: %v", err)
	}
	if _, err := c.Encrypt(ctx, &kms.EncryptInput{KeyId: aws.String(keyA), Plaintext: make([]byte, 4097)}); code(err) != "ValidationException" {
		t.Fatalf("Encrypt of 4097 bytes: %v", err)
	}

	// Decrypt denied on keyA: AccessDeniedException naming the caller, the
	// action and the key, never the plaintext; Encrypt is still allowed.
	f.DenyKMS(keyA, "kms:Decrypt")
	before := f.Calls("kms.Decrypt")
	_, err = c.Decrypt(ctx, &kms.DecryptInput{KeyId: aws.String(keyA), CiphertextBlob: enc.CiphertextBlob, EncryptionContext: encCtx})
	// KMS models no AccessDeniedException: the SDK answers a generic API error.
	var denied smithy.APIError
	want := "User: arn:aws:sts::111122223333:assumed-role/gitops-sync/static is not authorized to perform: kms:Decrypt on resource: " + keyA +
		" because no resource-based policy allows the kms:Decrypt action"
	if !errors.As(err, &denied) || denied.ErrorCode() != "AccessDeniedException" || denied.ErrorMessage() != want || strings.Contains(err.Error(), string(plain)) {
		t.Fatalf("denied Decrypt: %v", err)
	}
	if f.Calls("kms.Decrypt") != before+1 {
		t.Fatalf("kms.Decrypt calls %d → %d", before, f.Calls("kms.Decrypt"))
	}
	if _, err := c.Encrypt(ctx, &kms.EncryptInput{KeyId: aws.String(keyA), Plaintext: plain}); err != nil {
		t.Fatalf("Encrypt after denying Decrypt: %v", err)
	}

	// Keys the fake did not issue are refused.
	if _, err := kmsClient(f, "AKIAUNKNOWN").Encrypt(ctx, &kms.EncryptInput{KeyId: aws.String(keyB), Plaintext: plain}); code(err) != "UnrecognizedClientException" {
		t.Fatalf("KMS with an unknown key: %v", err)
	}
}
