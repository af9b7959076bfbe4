package awsfake

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// Roles Anywhere CreateSession, decided as the service documents it
// (rolesanywhere/latest/userguide/authentication.html, trust-model.html):
//
//  1. the request is signed (AWS4-X509-*-SHA256, SigV4 canonicalization) with
//     the key of the certificate in X-Amz-X509, which is a signed header;
//  2. the certificate chains (through X-Amz-X509-Chain) to the trust anchor
//     named by trustAnchorArn, and is valid now, for client authentication;
//  3. the profile names the role;
//  4. the role exists and its trust policy (iam.go) allows
//     rolesanywhere.amazonaws.com sts:AssumeRole, sts:TagSession and
//     sts:SetSourceIdentity with the certificate's principal tags
//     (aws:PrincipalTag/x509Subject/CN, …, x509SAN/URI) and aws:SourceArn
//     (the trust anchor) as condition keys.
//
// An account with no trust anchor registered (TrustAnchor) skips 2 and 3:
// unit tests of checks that are not about the certificate need no CA. The
// signature (1) and the role (4) are checked always.

type trustAnchor struct {
	roots *x509.CertPool
}

// TrustAnchor registers a CERTIFICATE_BUNDLE trust anchor: CreateSession
// with this trustAnchorArn accepts only certificates that chain to roots.
func (s *Server) TrustAnchor(arn string, roots ...*x509.Certificate) {
	pool := x509.NewCertPool()
	for _, r := range roots {
		pool.AddCert(r)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.anchors[arn] = trustAnchor{roots: pool}
}

// Profile registers a profile that lets Roles Anywhere assume roleArns.
func (s *Server) Profile(arn string, roleArns ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	roles := map[string]bool{}
	for _, r := range roleArns {
		roles[r] = true
	}
	s.profiles[arn] = roles
}

// x509Authorization is "AWS4-X509-ECDSA-SHA256 Credential=<serial>/<date>/<region>/rolesanywhere/aws4_request,
// SignedHeaders=a;b, Signature=<hex>".
var x509AuthRE = regexp.MustCompile(`^(AWS4-X509-(?:ECDSA|RSA)-SHA256) Credential=([0-9]+)/([0-9]{8}/[^/]+/rolesanywhere/aws4_request), SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]+)$`)

// maxSessionBody bounds a CreateSession body (durationSeconds and a few optional fields).
const maxSessionBody = 64 << 10

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	if s.fault(w, "rolesanywhere.CreateSession", true) {
		return
	}
	m := x509AuthRE.FindStringSubmatch(r.Header.Get("Authorization"))
	if r.Method != http.MethodPost || r.URL.Path != "/sessions" || m == nil {
		jsonError(w, 400, "ValidationException", "not a CreateSession request")
		return
	}
	alg, scope, signed, sigHex := m[1], m[3], strings.Split(m[4], ";"), m[5]
	body, err := io.ReadAll(io.LimitReader(r.Body, maxSessionBody+1))
	if err != nil || len(body) > maxSessionBody {
		jsonError(w, 400, "ValidationException", "request body unreadable or too large")
		return
	}
	leaf, chain, err := requestCertificates(r)
	if err != nil {
		jsonError(w, 400, "ValidationException", err.Error())
		return
	}
	for _, h := range []string{"x-amz-date", "x-amz-x509"} {
		if !contains(signed, h) {
			jsonError(w, 403, "AccessDeniedException", "header "+h+" is not signed")
			return
		}
	}
	if len(chain) > 0 && !contains(signed, "x-amz-x509-chain") {
		jsonError(w, 403, "AccessDeniedException", "header x-amz-x509-chain is not signed")
		return
	}
	date, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || !strings.HasPrefix(scope, date.Format("20060102")+"/") {
		jsonError(w, 403, "AccessDeniedException", "X-Amz-Date is missing or does not match the credential scope")
		return
	}
	if skew := time.Since(date); skew > 5*time.Minute || skew < -5*time.Minute {
		jsonError(w, 403, "AccessDeniedException", "Signature expired: the request time is more than 5 minutes from the server time")
		return
	}
	if !verifyX509Signature(leaf, alg, stringToSign(r, alg, date, scope, signed, body), sigHex) {
		jsonError(w, 403, "AccessDeniedException", "Signature validation failed")
		return
	}

	q := r.URL.Query()
	anchorArn, profileArn, role := q.Get("trustAnchorArn"), q.Get("profileArn"), q.Get("roleArn")
	var in struct {
		DurationSeconds *int `json:"durationSeconds"`
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &in); err != nil {
			jsonError(w, 400, "ValidationException", "request body is not JSON")
			return
		}
	}
	duration := time.Hour
	if in.DurationSeconds != nil {
		if *in.DurationSeconds < 900 || *in.DurationSeconds > 43200 {
			jsonError(w, 400, "ValidationException", "durationSeconds must be between 900 and 43200")
			return
		}
		duration = time.Duration(*in.DurationSeconds) * time.Second
	}

	s.mu.Lock()
	reject, allowed := s.rejectCerts, s.roles[role]
	anchor, anchorKnown := s.anchors[anchorArn]
	profileRoles, profileKnown := s.profiles[profileArn]
	anyAnchor := len(s.anchors) > 0
	s.mu.Unlock()
	now := time.Now()
	switch {
	case reject != "":
		jsonError(w, 403, "AccessDeniedException", reject)
		return
	case now.After(leaf.NotAfter):
		jsonError(w, 403, "AccessDeniedException", "Certificate has expired")
		return
	case now.Before(leaf.NotBefore):
		jsonError(w, 403, "AccessDeniedException", "Certificate is not yet valid")
		return
	}
	if anyAnchor {
		if !anchorKnown {
			jsonError(w, 404, "ResourceNotFoundException", "Trust anchor "+anchorArn+" not found")
			return
		}
		inter := x509.NewCertPool()
		for _, c := range chain {
			inter.AddCert(c)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: anchor.roots, Intermediates: inter, CurrentTime: now,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			jsonError(w, 403, "AccessDeniedException", "Untrusted Signing Certificate")
			return
		}
		if !profileKnown {
			jsonError(w, 404, "ResourceNotFoundException", "Profile "+profileArn+" not found")
			return
		}
		if !profileRoles[role] {
			jsonError(w, 403, "AccessDeniedException", "Unable to assume role for arn "+role+": the profile does not list it")
			return
		}
	}
	if !allowed {
		jsonError(w, 403, "AccessDeniedException", "Unable to assume role for arn "+role)
		return
	}
	tags := principalTags(leaf)
	tags["aws:SourceArn"] = anchorArn
	if !s.trusts(role, tags) {
		// The service says no more than this: which condition failed is for the role's owner to find.
		jsonError(w, 403, "AccessDeniedException", "Unable to assume role for arn "+role)
		return
	}

	akid := "ASIA" + strings.ToUpper(randomID(8))
	s.mu.Lock()
	// The session name defaults to the certificate's serial in hex, as Roles Anywhere does.
	s.keys[akid] = session{role: role, name: hex.EncodeToString(leaf.SerialNumber.Bytes())}
	s.sessions++
	s.mu.Unlock()
	writeJSON(w, "application/json", map[string]any{"credentialSet": []any{map[string]any{
		"assumedRoleUser": map[string]any{"arn": role},
		"sourceIdentity":  leaf.Subject.CommonName,
		"credentials": map[string]any{
			"accessKeyId": akid, "secretAccessKey": randomID(20), "sessionToken": randomID(32),
			"expiration": now.Add(duration).UTC().Format(time.RFC3339),
		}}}})
}

// Sessions reports how many sessions CreateSession issued.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions
}

// requestCertificates reads X-Amz-X509 (the signing certificate) and
// X-Amz-X509-Chain (comma-separated, base64 DER).
func requestCertificates(r *http.Request) (*x509.Certificate, []*x509.Certificate, error) {
	der, err := base64.StdEncoding.DecodeString(r.Header.Get("X-Amz-X509"))
	if err != nil {
		return nil, nil, fmt.Errorf("X-Amz-X509 is not base64 DER")
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("X-Amz-X509 is not a certificate")
	}
	if leaf.Version != 3 {
		return nil, nil, fmt.Errorf("the signing certificate must be a v3 certificate")
	}
	var chain []*x509.Certificate
	if v := r.Header.Get("X-Amz-X509-Chain"); v != "" {
		parts := strings.Split(v, ",")
		if len(parts) > 5 {
			return nil, nil, fmt.Errorf("X-Amz-X509-Chain holds more than 5 certificates")
		}
		for _, p := range parts {
			der, err := base64.StdEncoding.DecodeString(strings.TrimSpace(p))
			if err != nil {
				return nil, nil, fmt.Errorf("X-Amz-X509-Chain is not base64 DER")
			}
			c, err := x509.ParseCertificate(der)
			if err != nil {
				return nil, nil, fmt.Errorf("X-Amz-X509-Chain holds something that is not a certificate")
			}
			chain = append(chain, c)
		}
	}
	return leaf, chain, nil
}

// stringToSign rebuilds what the client signed: SigV4's canonical request
// over the signed headers, hashed, after the algorithm, date and scope.
func stringToSign(r *http.Request, alg string, date time.Time, scope string, signed []string, body []byte) string {
	headers := make([]string, len(signed))
	for i, h := range signed {
		var vals []string
		if h == "host" {
			vals = []string{r.Host}
		} else {
			vals = r.Header.Values(h)
		}
		for j, v := range vals {
			vals[j] = strings.Join(strings.Fields(v), " ")
		}
		headers[i] = h + ":" + strings.Join(vals, ",")
	}
	bodyHash := sha256.Sum256(body)
	canonical := strings.Join([]string{
		r.Method,
		r.URL.EscapedPath(),
		strings.ReplaceAll(r.URL.Query().Encode(), "+", "%20"),
		strings.Join(headers, "\n") + "\n",
		strings.Join(signed, ";"),
		hex.EncodeToString(bodyHash[:]),
	}, "\n")
	sum := sha256.Sum256([]byte(canonical))
	return alg + "\n" + date.Format("20060102T150405Z") + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
}

// verifyX509Signature checks sigHex over msg (SHA-256) with the certificate's key.
func verifyX509Signature(cert *x509.Certificate, alg, msg, sigHex string) bool {
	sig, err := hex.DecodeString(sigHex)
	if err != nil {
		return false
	}
	digest := sha256.Sum256([]byte(msg))
	switch pub := cert.PublicKey.(type) {
	case *ecdsa.PublicKey:
		return alg == "AWS4-X509-ECDSA-SHA256" && ecdsa.VerifyASN1(pub, digest[:], sig)
	case *rsa.PublicKey:
		return alg == "AWS4-X509-RSA-SHA256" && rsa.VerifyPKCS1v15(pub, 0x5 /* crypto.SHA256 */, digest[:], sig) == nil
	}
	return false
}

// principalTags are the session tags the default attribute mapping derives
// from a certificate: every subject and issuer RDN, and the first DNS and URI SAN.
func principalTags(c *x509.Certificate) map[string]string {
	tags := map[string]string{}
	rdns := func(prefix string, n [][]string) {
		for _, kv := range n {
			tags["aws:PrincipalTag/"+prefix+"/"+kv[0]] = kv[1]
		}
	}
	rdns("x509Subject", rdnValues(c.Subject.CommonName, c.Subject.Organization, c.Subject.OrganizationalUnit,
		c.Subject.Province, c.Subject.Locality, c.Subject.Country))
	rdns("x509Issuer", rdnValues(c.Issuer.CommonName, c.Issuer.Organization, c.Issuer.OrganizationalUnit,
		c.Issuer.Province, c.Issuer.Locality, c.Issuer.Country))
	if len(c.DNSNames) > 0 {
		tags["aws:PrincipalTag/x509SAN/DNS"] = c.DNSNames[0]
	}
	if len(c.URIs) > 0 {
		tags["aws:PrincipalTag/x509SAN/URI"] = c.URIs[0].String()
	}
	return tags
}

func rdnValues(cn string, o, ou, st, l, country []string) [][]string {
	var out [][]string
	if cn != "" {
		out = append(out, []string{"CN", cn})
	}
	for _, f := range []struct {
		rdn string
		v   []string
	}{{"O", o}, {"OU", ou}, {"ST", st}, {"L", l}, {"C", country}} {
		if len(f.v) > 0 {
			out = append(out, []string{f.rdn, f.v[0]})
		}
	}
	return out
}
