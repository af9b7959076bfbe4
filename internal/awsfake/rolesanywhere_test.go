package awsfake_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spokeforge/spokeforge/internal/awsfake"
	"github.com/spokeforge/spokeforge/internal/credentials"
)

const (
	raAnchor  = "arn:aws:rolesanywhere:us-east-1:111122223333:trust-anchor/0c5d6a3e-1f2b-4c8d-9e0f-1a2b3c4d5e6f"
	raProfile = "arn:aws:rolesanywhere:us-east-1:111122223333:profile/7a8b9c0d-1e2f-4a5b-8c6d-7e8f9a0b1c2d"
	raRole    = "arn:aws:iam::111122223333:role/eue1-workload"
	raURI     = "spiffe://spokeforge.io/acme-ml/prod/us-east-1/dc-ash1/equinix/gpu-east-1"
)

type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newCA(t *testing.T, cn string) ca {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return ca{cert, key}
}

type leafSpec struct {
	cn, ou, uri string
	st, l       string // omitted when empty
	notAfter    time.Time
	selfSigned  bool
}

// writeLeaf issues a workload certificate as cert-manager would and writes
// tls.crt and tls.key into a new folder.
func writeLeaf(t *testing.T, issuer ca, s leafSpec) (crt, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(s.uri)
	subject := pkix.Name{CommonName: s.cn, Organization: []string{"acme-ml"}, OrganizationalUnit: []string{s.ou}}
	if s.st != "" {
		subject.Province = []string{s.st}
	}
	if s.l != "" {
		subject.Locality = []string{s.l}
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(0x5eed),
		Subject:   subject,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: s.notAfter, URIs: []*url.URL{u},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	parent, signer := issuer.cert, issuer.key
	if s.selfSigned {
		parent, signer = tpl, k
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, parent, &k.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	crt, key = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(crt, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return crt, key
}

// TestRolesAnywhereDecidesAsTheService drives the real signing helper (the
// one the credentials Deployment and the agent link) against the fake: it
// issues a session only for a correctly signed request whose certificate
// chains to the anchor and meets the role's trust-policy conditions.
func TestRolesAnywhereDecidesAsTheService(t *testing.T) {
	root, other := newCA(t, "spokeforge-ca"), newCA(t, "someone-else")
	good := leafSpec{cn: "gpu-east-1", ou: "prod", uri: raURI, notAfter: time.Now().Add(time.Hour)}
	cases := []struct {
		name    string
		issuer  ca
		leaf    func(leafSpec) leafSpec
		setup   func(f *awsfake.Server)
		opts    func(o *credentials.Options)
		tamper  func(r *http.Request) // a proxy between the helper and the fake
		swapKey bool                  // sign with a key that is not the certificate's
		wantErr string                // "" = a session
	}{
		{name: "chained, listed, conditions hold"},
		{name: "session duration honoured", opts: func(o *credentials.Options) { o.SessionDuration = 15 * time.Minute }},
		{name: "self-signed", leaf: func(s leafSpec) leafSpec { s.selfSigned = true; return s }, wantErr: "Untrusted Signing Certificate"},
		{name: "another CA", issuer: other, wantErr: "Untrusted Signing Certificate"},
		{name: "expired", leaf: func(s leafSpec) leafSpec { s.notAfter = time.Now().Add(-time.Minute); return s }, wantErr: "expired"},
		{name: "CN condition", leaf: func(s leafSpec) leafSpec { s.cn = "gpu-west-1"; return s }, wantErr: "Unable to assume role for arn " + raRole},
		{name: "OU condition", leaf: func(s leafSpec) leafSpec { s.ou = "dev"; return s }, wantErr: "Unable to assume role for arn " + raRole},
		{name: "URI condition", leaf: func(s leafSpec) leafSpec { s.uri = raURI + "x"; return s }, wantErr: "Unable to assume role for arn " + raRole},
		{name: "source ARN condition", setup: func(f *awsfake.Server) {
			f.RoleCondition(raRole, "aws:SourceArn", strings.Replace(raAnchor, "0c5d", "ffff", 1))
		}, wantErr: "Unable to assume role for arn " + raRole},
		{name: "role not in profile", setup: func(f *awsfake.Server) { f.Profile(raProfile) }, wantErr: "the profile does not list it"},
		{name: "role does not exist", opts: func(o *credentials.Options) { o.RoleArn += "-gone" }, wantErr: "AccessDenied"},
		{name: "unknown trust anchor", opts: func(o *credentials.Options) { o.TrustAnchorArn = strings.Replace(raAnchor, "0c5d", "ffff", 1) },
			wantErr: "ResourceNotFound"},
		{name: "unknown profile", opts: func(o *credentials.Options) { o.ProfileArn = strings.Replace(raProfile, "7a8b", "ffff", 1) },
			wantErr: "ResourceNotFound"},
		{name: "signed with another key", swapKey: true, wantErr: "Signature validation failed"},
		{name: "role changed after signing", tamper: func(r *http.Request) {
			q := r.URL.Query()
			q.Set("roleArn", raRole+"-admin")
			r.URL.RawQuery = q.Encode()
		}, setup: func(f *awsfake.Server) { f.AllowRole(raRole + "-admin"); f.Profile(raProfile, raRole, raRole+"-admin") },
			wantErr: "Signature validation failed"},
		{name: "date changed after signing", tamper: func(r *http.Request) { r.Header.Set("X-Amz-Date", "20200101T000000Z") },
			wantErr: "AccessDenied"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := awsfake.New("111122223333", "us-east-1")
			base, err := f.Start("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			f.TrustAnchor(raAnchor, root.cert)
			f.Profile(raProfile, raRole)
			f.AllowRole(raRole)
			f.RoleCondition(raRole, "aws:PrincipalTag/x509Subject/CN", "gpu-east-1")
			f.RoleCondition(raRole, "aws:PrincipalTag/x509Subject/OU", "prod")
			f.RoleCondition(raRole, "aws:PrincipalTag/x509SAN/URI", raURI)
			f.RoleCondition(raRole, "aws:SourceArn", raAnchor)
			if tc.setup != nil {
				tc.setup(f)
			}
			endpoint := base
			if tc.tamper != nil {
				u, _ := url.Parse(base)
				p := httputil.NewSingleHostReverseProxy(u)
				next := p.Director
				p.Director = func(r *http.Request) { next(r); tc.tamper(r) }
				proxy := httptest.NewServer(p)
				defer proxy.Close()
				endpoint = proxy.URL
			}
			issuer := root
			if tc.issuer.cert != nil {
				issuer = tc.issuer
			}
			spec := good
			if tc.leaf != nil {
				spec = tc.leaf(good)
			}
			crt, key := writeLeaf(t, issuer, spec)
			if tc.swapKey {
				_, key = writeLeaf(t, issuer, good)
			}
			o := credentials.Options{Certificate: crt, PrivateKey: key, TrustAnchorArn: raAnchor, ProfileArn: raProfile,
				RoleArn: raRole, Region: "us-east-1", SessionDuration: time.Hour, Endpoint: endpoint}
			if tc.opts != nil {
				tc.opts(&o)
			}
			out, err := credentials.Exchange(o)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("CreateSession refused: %v", err)
				}
				exp, err := time.Parse(time.RFC3339, out.Expiration)
				if err != nil {
					t.Fatal(err)
				}
				if d := time.Until(exp); d < o.SessionDuration-time.Minute || d > o.SessionDuration+time.Minute {
					t.Fatalf("session lasts %s, asked %s", d, o.SessionDuration)
				}
				if f.Sessions() != 1 {
					t.Fatalf("%d sessions issued, want 1", f.Sessions())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("CreateSession: %v, want an error with %q", err, tc.wantErr)
			}
			if f.Sessions() != 0 {
				t.Fatalf("a refused request issued %d sessions", f.Sessions())
			}
		})
	}
}
