package awsfake

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// AWS KMS as its API reference describes it, for the calls SOPS's KMS key
// source makes (Encrypt and Decrypt of a data key, with an encryption
// context): symmetric keys only, named by key ARN or key id. A
// CiphertextBlob really is an encryption of the plaintext: AES-256-GCM
// under a secret the key was given at random when the test added it, with
// the key ARN and the encryption context as additional data, so a blob
// decrypts only with its key and exactly the context it was encrypted with.
// Errors are {"__type": Code, "message": ...} with HTTP 400, as KMS answers.

const kmsContentType = "application/x-amz-json-1.1"

// kmsBlobVersion starts every ciphertext blob:
// version | uint16 len(key ARN) | key ARN | 12-byte nonce | sealed plaintext.
const kmsBlobVersion = 1

// AddKMSKey creates a symmetric encryption KMS key with this ARN
// (arn:aws:kms:<region>:<account>:key/<uuid>), enabled, with a fresh secret.
func (s *Server) AddKMSKey(arn string) {
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kmsKeys[arn] = secret
}

// NewKMSKey creates a KMS key in the fake's account and region with a
// random key id, and returns its ARN.
func (s *Server) NewKMSKey() string {
	arn := fmt.Sprintf("arn:aws:kms:%s:%s:key/%s", s.Region, s.AccountID, randomUUID())
	s.AddKMSKey(arn)
	return arn
}

// DenyKMS makes every caller's action ("kms:Decrypt", "kms:Encrypt") on the
// key fail with AccessDeniedException, as when neither the key policy nor
// an identity policy allows it.
func (s *Server) DenyKMS(keyARN, action string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kmsDenied[keyARN+" "+action] = true
}

func kmsError(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Content-Type", kmsContentType)
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(http.StatusBadRequest)
	body := map[string]string{"__type": code}
	if msg != "" {
		body["message"] = msg
	}
	writeJSONBody(w, body)
}

func kmsValidation(w http.ResponseWriter, field, constraint string) {
	kmsError(w, "ValidationException", fmt.Sprintf("1 validation error detected: Value at '%s' failed to satisfy constraint: %s", field, constraint))
}

func (s *Server) kms(w http.ResponseWriter, sess session, op string, in map[string]any) {
	str := func(k string) string { v, _ := in[k].(string); return v }
	// blob decodes a base64 blob member; false when it answered an error.
	blob := func(k string) ([]byte, bool) {
		v, ok := in[k].(string)
		if !ok {
			return nil, true
		}
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			kmsError(w, "SerializationException", "Start of structure or map found where not expected: "+k+" is not base64")
			return nil, false
		}
		return b, true
	}
	ctx, ok := kmsContext(in["EncryptionContext"])
	if !ok {
		kmsError(w, "SerializationException", "EncryptionContext must map strings to strings")
		return
	}
	if alg := str("EncryptionAlgorithm"); alg != "" && alg != "SYMMETRIC_DEFAULT" {
		kmsError(w, "InvalidKeyUsageException", "The request's EncryptionAlgorithm "+alg+" is not valid for a symmetric encryption KMS key.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// key resolves a KeyId (key ARN or key id) to a key ARN; "" when it
	// answered NotFoundException.
	key := func(id string) string {
		arn := id
		if !strings.HasPrefix(id, "arn:") && !strings.HasPrefix(id, "alias/") {
			arn = fmt.Sprintf("arn:aws:kms:%s:%s:key/%s", s.Region, s.AccountID, id)
		}
		if _, ok := s.kmsKeys[arn]; ok {
			return arn
		}
		if strings.HasPrefix(id, "alias/") || strings.Contains(id, ":alias/") {
			kmsError(w, "NotFoundException", "Alias "+id+" is not found.")
		} else {
			kmsError(w, "NotFoundException", "Key '"+arn+"' does not exist")
		}
		return ""
	}
	denied := func(arn, action string) bool {
		if !s.kmsDenied[arn+" "+action] {
			return false
		}
		roleName := sess.role[strings.LastIndex(sess.role, "/")+1:]
		caller := fmt.Sprintf("arn:aws:sts::%s:assumed-role/%s/%s", s.AccountID, roleName, sess.name)
		kmsError(w, "AccessDeniedException", fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s because no resource-based policy allows the %s action",
			caller, action, arn, action))
		return true
	}
	switch op {
	case "Encrypt":
		plain, ok := blob("Plaintext")
		if !ok {
			return
		}
		switch id := str("KeyId"); {
		case id == "":
			kmsValidation(w, "keyId", "Member must not be null")
		case len(plain) == 0:
			kmsValidation(w, "plaintext", "Member must have length greater than or equal to 1")
		case len(plain) > 4096:
			kmsValidation(w, "plaintext", "Member must have length less than or equal to 4096")
		default:
			arn := key(id)
			if arn == "" || denied(arn, "kms:Encrypt") {
				return
			}
			writeJSON(w, kmsContentType, map[string]any{"CiphertextBlob": kmsSeal(arn, s.kmsKeys[arn], plain, ctx),
				"KeyId": arn, "EncryptionAlgorithm": "SYMMETRIC_DEFAULT"})
		}
	case "Decrypt":
		ct, ok := blob("CiphertextBlob")
		if !ok {
			return
		}
		switch {
		case ct == nil:
			kmsValidation(w, "ciphertextBlob", "Member must not be null")
			return
		case len(ct) == 0:
			kmsValidation(w, "ciphertextBlob", "Member must have length greater than or equal to 1")
			return
		case len(ct) > 6144:
			kmsValidation(w, "ciphertextBlob", "Member must have length less than or equal to 6144")
			return
		}
		blobARN, nonce, sealed, ok := kmsParse(ct)
		if !ok {
			kmsError(w, "InvalidCiphertextException", "")
			return
		}
		arn := blobARN
		if id := str("KeyId"); id != "" {
			if arn = key(id); arn == "" {
				return
			}
			if arn != blobARN {
				kmsError(w, "IncorrectKeyException", "The key ID in the request does not identify a KMS key that can perform this operation.")
				return
			}
		} else if key(arn) == "" {
			return
		}
		if denied(arn, "kms:Decrypt") {
			return
		}
		plain, err := kmsAEAD(s.kmsKeys[arn]).Open(nil, nonce, sealed, kmsAAD(arn, ctx))
		if err != nil {
			// A wrong encryption context or a damaged blob: KMS says no more.
			kmsError(w, "InvalidCiphertextException", "")
			return
		}
		writeJSON(w, kmsContentType, map[string]any{"KeyId": arn,
			"Plaintext": base64.StdEncoding.EncodeToString(plain), "EncryptionAlgorithm": "SYMMETRIC_DEFAULT"})
	default:
		kmsError(w, "UnsupportedOperationException", "awsfake KMS does not serve "+op)
	}
}

// kmsContext reads an EncryptionContext member (absent: empty).
func kmsContext(raw any) (map[string]string, bool) {
	out := map[string]string{}
	if raw == nil {
		return out, true
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, false
	}
	for k, v := range m {
		sv, ok := v.(string)
		if !ok {
			return nil, false
		}
		out[k] = sv
	}
	return out, true
}

func kmsAEAD(secret []byte) cipher.AEAD {
	b, err := aes.NewCipher(secret)
	if err != nil {
		panic(err) // the secret is always 32 bytes
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		panic(err)
	}
	return g
}

// kmsAAD binds a ciphertext to its key and its encryption context, the
// context in key order so that the map's order does not matter.
func kmsAAD(arn string, ctx map[string]string) []byte {
	keys := make([]string, 0, len(ctx))
	for k := range ctx {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pairs := make([][2]string, 0, len(keys))
	for _, k := range keys {
		pairs = append(pairs, [2]string{k, ctx[k]})
	}
	b, _ := json.Marshal(struct {
		Key     string
		Context [][2]string
	}{arn, pairs})
	return b
}

// kmsSeal encrypts plain under the key and returns the blob, base64.
func kmsSeal(arn string, secret, plain []byte, ctx map[string]string) string {
	g := kmsAEAD(secret)
	nonce := make([]byte, g.NonceSize())
	_, _ = rand.Read(nonce)
	b := []byte{kmsBlobVersion}
	b = binary.BigEndian.AppendUint16(b, uint16(len(arn)))
	b = append(b, arn...)
	b = append(b, nonce...)
	b = g.Seal(b, nonce, plain, kmsAAD(arn, ctx))
	return base64.StdEncoding.EncodeToString(b)
}

// kmsParse splits a blob into its key ARN, nonce and sealed plaintext.
func kmsParse(b []byte) (arn string, nonce, sealed []byte, ok bool) {
	const nonceSize = 12
	if len(b) < 3 || b[0] != kmsBlobVersion {
		return "", nil, nil, false
	}
	n := int(binary.BigEndian.Uint16(b[1:3]))
	rest := b[3:]
	if len(rest) < n+nonceSize+16 {
		return "", nil, nil, false
	}
	return string(rest[:n]), rest[n : n+nonceSize], rest[n+nonceSize:], true
}
