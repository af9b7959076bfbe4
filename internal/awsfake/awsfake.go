// Package awsfake serves local stand-ins for the AWS APIs spokeforge's
// checks call, on one HTTP endpoint, so tests, the e2e harness and demos
// drive the real aws-sdk-go-v2 clients against them (AWS_ENDPOINT_URL):
//
//   - IAM Roles Anywhere CreateSession (in rolesanywhere.go: the X.509
//     request signature, the chain to a registered trust anchor, the
//     profile and the role trust policy's conditions on the certificate),
//     issuing session keys bound to the role and the certificate's serial;
//   - STS GetCallerIdentity (query protocol), answering the assumed-role
//     ARN of the session key that signed the request;
//   - Secrets Manager CreateSecret/GetSecretValue/PutSecretValue/
//     DescribeSecret/TagResource/ListSecrets/DeleteSecret (JSON 1.1, in
//     secretsmanager.go: versions, staging labels, ClientRequestToken
//     idempotency, tags, and an optional eventual-consistency window);
//   - ECR GetAuthorizationToken/CreateRepository/DescribeRepositories (JSON 1.1);
//   - SQS CreateQueue/GetQueueUrl/GetQueueAttributes (JSON 1.0, the
//     protocol current SDKs speak; goaws v0.4.5 speaks only the query
//     protocol, so it cannot serve them);
//   - KMS Encrypt/Decrypt (JSON 1.1, in kms.go: symmetric keys the test
//     names, real AES-GCM ciphertexts bound to the key and the encryption
//     context, NotFound/InvalidCiphertext/AccessDenied as KMS answers);
//   - S3 through github.com/johannesboyne/gofakes3 (path-style).
//
// Requests are routed by the service in the SigV4 credential scope. Every
// service but Roles Anywhere rejects keys it did not issue, so a check that
// passes here really used the credentials Roles Anywhere handed out.
// Each call is authorized against the session role's permission policies
// (iam.go), as IAM would: AccessDenied names the action and the resource.
// Faults (errors, delays) can be injected per operation to exercise
// retries and classification.
package awsfake

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/spokeforge/spokeforge/internal/iampolicy"
)

// Fault makes the next Times calls of an operation ("sqs.GetQueueUrl")
// fail with Status and Code, or wait Delay first (Code empty: only delay).
// Times < 0 means every call.
type Fault struct {
	Times   int
	Status  int
	Code    string
	Message string
	Delay   time.Duration
}

type session struct {
	role, name string
}

type queue struct {
	created time.Time
	attrs   map[string]string
}

// Server is one fake AWS account in one region.
type Server struct {
	AccountID, Region string

	mu          sync.Mutex
	roles       map[string]bool // role ARNs Roles Anywhere may assume
	anchors     map[string]trustAnchor
	profiles    map[string]map[string]bool               // profile ARN → the role ARNs it lists
	trust       map[string]iampolicy.Document            // role ARN → its trust policy (iam.go)
	policies    map[string]map[string]iampolicy.Document // role ARN → its permission policies by name
	sessions    int
	rejectCerts string // non-empty: CreateSession answers AccessDenied with it
	keys        map[string]session
	secrets     map[string]*secret
	repos       map[string]time.Time
	queues      map[string]*queue
	kmsKeys     map[string][]byte // key ARN → its AES-256 secret
	kmsDenied   map[string]bool   // key ARN + " " + action ("kms:Decrypt")
	smWindow    time.Duration     // SetSecretsConsistencyWindow
	faults      map[string]*Fault
	calls       map[string]int
	s3          *gofakes3.GoFakeS3
	backend     *s3mem.Backend

	srv      *http.Server
	listener net.Listener
}

type secret struct {
	name, arn, description string
	created, changed       time.Time
	deleted                *time.Time
	// visible is when the secret stops answering ResourceNotFoundException
	// after its creation (SetSecretsConsistencyWindow).
	visible  time.Time
	tags     []tag
	versions map[string]*version
}

type tag struct{ Key, Value string }

type version struct {
	value   string
	stages  []string
	created time.Time
}

// New returns a fake account with no resources.
func New(accountID, region string) *Server {
	be := s3mem.New()
	return &Server{
		AccountID: accountID, Region: region,
		roles: map[string]bool{}, anchors: map[string]trustAnchor{}, profiles: map[string]map[string]bool{}, trust: map[string]iampolicy.Document{}, policies: map[string]map[string]iampolicy.Document{}, keys: map[string]session{}, secrets: map[string]*secret{},
		repos: map[string]time.Time{}, queues: map[string]*queue{}, kmsKeys: map[string][]byte{}, kmsDenied: map[string]bool{}, faults: map[string]*Fault{}, calls: map[string]int{},
		s3: gofakes3.New(be, gofakes3.WithAutoBucket(false)), backend: be,
	}
}

// Start listens on addr ("127.0.0.1:0" for any port) and serves until Close.
func (s *Server) Start(addr string) (string, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	s.listener = l
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(l) }()
	return s.URL(), nil
}

// URL is the endpoint to put in AWS_ENDPOINT_URL.
func (s *Server) URL() string { return "http://" + s.listener.Addr().String() }

// Close stops serving.
func (s *Server) Close() error {
	if s.srv == nil {
		return nil
	}
	return s.srv.Close()
}

// RejectCertificates makes CreateSession fail with AccessDeniedException
// and msg (e.g. "Untrusted signing certificate"); "" accepts again.
func (s *Server) RejectCertificates(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejectCerts = msg
}

// StaticKey registers an access key for roleArn without Roles Anywhere,
// for setting resources up from a test.
func (s *Server) StaticKey(akid, roleArn string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[akid] = session{role: roleArn, name: "static"}
}

// AddSecret creates a Secrets Manager secret.
func (s *Server) AddSecret(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addSecretLocked(name)
}

func (s *Server) addSecretLocked(name string) *secret {
	now := time.Now().UTC()
	sec := &secret{name: name, arn: fmt.Sprintf("arn:aws:secretsmanager:%s:%s:secret:%s-%s", s.Region, s.AccountID, name, randomID(3)),
		created: now, changed: now, visible: now, versions: map[string]*version{}}
	s.secrets[name] = sec
	return sec
}

// SetSecretsConsistencyWindow makes every secret created through
// CreateSecret from now on answer ResourceNotFoundException to every other
// call, and stay out of ListSecrets, for d after its creation, as Secrets
// Manager may right after a create (eventual consistency); 0 turns it off.
func (s *Server) SetSecretsConsistencyWindow(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.smWindow = d
}

// SecretVersions reports how many versions a secret holds (0 if none or no secret).
func (s *Server) SecretVersions(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sec, ok := s.secrets[name]; ok {
		return len(sec.versions)
	}
	return 0
}

// MarkSecretDeleted schedules a secret for deletion, as DeleteSecret does.
func (s *Server) MarkSecretDeleted(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sec, ok := s.secrets[name]; ok {
		t := time.Now().UTC()
		sec.deleted = &t
	}
}

// RestoreSecret cancels a secret's scheduled deletion, as RestoreSecret does.
func (s *Server) RestoreSecret(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sec, ok := s.secrets[name]; ok {
		sec.deleted = nil
	}
}

// AddRepository creates an ECR repository.
func (s *Server) AddRepository(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos[name] = time.Now().UTC()
}

// AddQueue creates an SQS queue.
func (s *Server) AddQueue(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addQueueLocked(name, nil)
}

func (s *Server) addQueueLocked(name string, attrs map[string]string) *queue {
	if q, ok := s.queues[name]; ok {
		return q
	}
	q := &queue{created: time.Now().UTC(), attrs: map[string]string{}}
	for k, v := range attrs {
		q.attrs[k] = v
	}
	q.attrs["QueueArn"] = fmt.Sprintf("arn:aws:sqs:%s:%s:%s", s.Region, s.AccountID, name)
	if strings.HasSuffix(name, ".fifo") {
		q.attrs["FifoQueue"] = "true"
	}
	s.queues[name] = q
	return q
}

// AddBucket creates an S3 bucket.
func (s *Server) AddBucket(name string) error {
	return s.backend.CreateBucket(name)
}

// Inject sets the fault for an operation such as "sqs.GetQueueUrl".
func (s *Server) Inject(op string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[op] = &f
}

// Calls reports how often an operation was called.
func (s *Server) Calls(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

var scopeRE = regexp.MustCompile(`Credential=([^/,\s]+)/[0-9]{8}/[^/]+/([^/]+)/aws4_request`)

// ServeHTTP routes on the credential scope's service.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := scopeRE.FindStringSubmatch(r.Header.Get("Authorization"))
	if m == nil {
		jsonError(w, 403, "MissingAuthenticationTokenException", "Missing Authentication Token")
		return
	}
	akid, service := m[1], m[2]
	if service == "rolesanywhere" {
		s.createSession(w, r)
		return
	}
	s.mu.Lock()
	sess, known := s.keys[akid]
	s.mu.Unlock()
	switch service {
	case "sts":
		s.sts(w, r, sess, known)
	case "s3":
		if !known {
			writeXMLError(w, 403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
			return
		}
		op := "s3." + r.Method
		if s.fault(w, op, false) {
			return
		}
		action, resource := s3Request(r)
		if msg := s.authorize(sess, action, resource); msg != "" {
			writeS3Error(w, 403, "AccessDenied", msg)
			return
		}
		s.s3.Server().ServeHTTP(w, r)
	case "secretsmanager", "ecr", "sqs", "kms":
		target := r.Header.Get("X-Amz-Target")
		_, opName, _ := strings.Cut(target, ".")
		op := service + "." + opName
		if !known {
			jsonError(w, 400, "UnrecognizedClientException", "The security token included in the request is invalid.")
			return
		}
		if s.fault(w, op, true) {
			return
		}
		var in map[string]any
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil && err != io.EOF {
			jsonError(w, 400, "SerializationException", "request body is not JSON")
			return
		}
		for _, res := range s.jsonRequestResources(service, opName, in) {
			if msg := s.authorize(sess, service+":"+opName, res); msg != "" {
				code := "AccessDeniedException"
				if service == "sqs" {
					code = "AccessDenied"
				}
				jsonError(w, 400, code, msg)
				return
			}
		}
		switch service {
		case "secretsmanager":
			s.secretsManager(w, opName, in)
		case "ecr":
			s.ecr(w, opName, in)
		case "kms":
			s.kms(w, sess, opName, in)
		default:
			s.sqs(w, r.Host, opName, in)
		}
	default:
		jsonError(w, 400, "UnknownService", "awsfake does not serve "+service)
	}
}

// fault applies an injected fault; true when it answered the request.
func (s *Server) fault(w http.ResponseWriter, op string, jsonProto bool) bool {
	s.mu.Lock()
	s.calls[op]++
	f := s.faults[op]
	var cur Fault
	if f != nil && f.Times != 0 {
		cur = *f
		if f.Times > 0 {
			f.Times--
		}
	}
	s.mu.Unlock()
	if cur.Delay > 0 {
		time.Sleep(cur.Delay)
	}
	if cur.Code == "" {
		return false
	}
	if jsonProto {
		jsonError(w, cur.Status, cur.Code, cur.Message)
	} else {
		writeXMLError(w, cur.Status, cur.Code, cur.Message)
	}
	return true
}

func (s *Server) sts(w http.ResponseWriter, r *http.Request, sess session, known bool) {
	_ = r.ParseForm()
	op := "sts." + r.Form.Get("Action")
	if s.fault(w, op, false) {
		return
	}
	if !known {
		writeXMLError(w, 403, "InvalidClientTokenId", "The security token included in the request is invalid.")
		return
	}
	if r.Form.Get("Action") != "GetCallerIdentity" {
		writeXMLError(w, 400, "InvalidAction", "awsfake STS serves GetCallerIdentity only")
		return
	}
	roleName := sess.role[strings.LastIndex(sess.role, "/")+1:]
	arn := fmt.Sprintf("arn:aws:sts::%s:assumed-role/%s/%s", s.AccountID, roleName, sess.name)
	type result struct {
		Arn, UserId, Account string
	}
	w.Header().Set("Content-Type", "text/xml")
	_ = xml.NewEncoder(w).Encode(struct {
		XMLName xml.Name `xml:"https://sts.amazonaws.com/doc/2011-06-15/ GetCallerIdentityResponse"`
		Result  result   `xml:"GetCallerIdentityResult"`
		Meta    struct {
			RequestId string
		} `xml:"ResponseMetadata"`
	}{Result: result{Arn: arn, UserId: "AROAFAKE:" + sess.name, Account: s.AccountID}})
}

func (s *Server) ecr(w http.ResponseWriter, op string, in map[string]any) {
	const ct = "application/x-amz-json-1.1"
	s.mu.Lock()
	defer s.mu.Unlock()
	repo := func(name string, created time.Time) map[string]any {
		return map[string]any{
			"repositoryName": name, "registryId": s.AccountID, "createdAt": epoch(created),
			"repositoryArn": fmt.Sprintf("arn:aws:ecr:%s:%s:repository/%s", s.Region, s.AccountID, name),
			"repositoryUri": fmt.Sprintf("%s.dkr.ecr.%s.amazonaws.com/%s", s.AccountID, s.Region, name),
		}
	}
	switch op {
	case "GetAuthorizationToken":
		token := base64.StdEncoding.EncodeToString([]byte("AWS:" + randomID(24)))
		writeJSON(w, ct, map[string]any{"authorizationData": []any{map[string]any{
			"authorizationToken": token, "expiresAt": epoch(time.Now().Add(12 * time.Hour)),
			"proxyEndpoint": fmt.Sprintf("https://%s.dkr.ecr.%s.amazonaws.com", s.AccountID, s.Region),
		}}})
	case "CreateRepository":
		name, _ := in["repositoryName"].(string)
		if _, ok := s.repos[name]; ok {
			jsonError(w, 400, "RepositoryAlreadyExistsException", "The repository with name '"+name+"' already exists")
			return
		}
		s.repos[name] = time.Now().UTC()
		writeJSON(w, ct, map[string]any{"repository": repo(name, s.repos[name])})
	case "DescribeRepositories":
		var names []string
		if l, ok := in["repositoryNames"].([]any); ok {
			for _, v := range l {
				if n, ok := v.(string); ok {
					names = append(names, n)
				}
			}
		} else {
			for n := range s.repos {
				names = append(names, n)
			}
			sort.Strings(names)
		}
		var out []any
		for _, n := range names {
			created, ok := s.repos[n]
			if !ok {
				jsonError(w, 400, "RepositoryNotFoundException",
					fmt.Sprintf("The repository with name '%s' does not exist in the registry with id '%s'", n, s.AccountID))
				return
			}
			out = append(out, repo(n, created))
		}
		writeJSON(w, ct, map[string]any{"repositories": out})
	default:
		jsonError(w, 400, "InvalidAction", "awsfake ECR does not serve "+op)
	}
}

// sqs answers queue URLs on the host the client used, so they stay valid
// whatever address the server listens on.
func (s *Server) sqs(w http.ResponseWriter, host, op string, in map[string]any) {
	const ct = "application/x-amz-json-1.0"
	queueURL := func(name string) string { return fmt.Sprintf("http://%s/%s/%s", host, s.AccountID, name) }
	s.mu.Lock()
	defer s.mu.Unlock()
	notFound := func() {
		w.Header().Set("X-Amzn-Query-Error", "AWS.SimpleQueueService.NonExistentQueue;Sender")
		jsonError(w, 400, "com.amazonaws.sqs#QueueDoesNotExist", "The specified queue does not exist.")
	}
	switch op {
	case "CreateQueue":
		name, _ := in["QueueName"].(string)
		attrs := map[string]string{}
		if a, ok := in["Attributes"].(map[string]any); ok {
			for k, v := range a {
				attrs[k], _ = v.(string)
			}
		}
		s.addQueueLocked(name, attrs)
		writeJSON(w, ct, map[string]any{"QueueUrl": queueURL(name)})
	case "GetQueueUrl":
		name, _ := in["QueueName"].(string)
		if _, ok := s.queues[name]; !ok {
			notFound()
			return
		}
		writeJSON(w, ct, map[string]any{"QueueUrl": queueURL(name)})
	case "GetQueueAttributes":
		u, _ := in["QueueUrl"].(string)
		for name, q := range s.queues {
			if strings.HasSuffix(u, "/"+s.AccountID+"/"+name) {
				attrs := map[string]string{"ApproximateNumberOfMessages": "0",
					"CreatedTimestamp": fmt.Sprint(q.created.Unix())}
				for k, v := range q.attrs {
					attrs[k] = v
				}
				writeJSON(w, ct, map[string]any{"Attributes": attrs})
				return
			}
		}
		notFound()
	default:
		jsonError(w, 400, "InvalidAction", "awsfake SQS does not serve "+op)
	}
}

func epoch(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, contentType string, v any) {
	w.Header().Set("Content-Type", contentType)
	writeJSONBody(w, v)
}

func writeJSONBody(w http.ResponseWriter, v any) { _ = json.NewEncoder(w).Encode(v) }

func jsonError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": code, "message": msg})
}

// writeS3Error is S3's error body (no ErrorResponse wrapper).
func writeS3Error(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>awsfake</RequestId></Error>`,
		xmlEscape(code), xmlEscape(msg))
}

func writeXMLError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<ErrorResponse><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>awsfake</RequestId></ErrorResponse>`,
		xmlEscape(code), xmlEscape(msg))
}

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// PutSecretString stores value as the secret's new AWSCURRENT version, as
// PutSecretValue does, creating the secret if needed; it returns the version id.
func (s *Server) PutSecretString(name, value string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	sec, ok := s.secrets[name]
	if !ok {
		sec = s.addSecretLocked(name)
	}
	id := randomUUID()
	now := time.Now().UTC()
	sec.versions[id] = &version{value: value, created: now}
	sec.moveStage("AWSCURRENT", id)
	sec.changed = now
	return id
}
