package awsfake

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/spokeforge/spokeforge/internal/iampolicy"
)

// The fake's IAM: each role has a trust policy, which CreateSession
// evaluates for Roles Anywhere, and permission policies, which every
// service evaluates for each call a session of the role makes. A role with
// no permission policy is one of the fake's administrators (what a test
// sets resources up with): its calls are not checked.

// rolesAnywhereActions are what Roles Anywhere asks of a role's trust policy.
var rolesAnywhereActions = []string{"sts:AssumeRole", "sts:TagSession", "sts:SetSourceIdentity"}

// PutRole creates or replaces a role with its trust policy.
func (s *Server) PutRole(roleArn string, trust iampolicy.Document) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roles[roleArn] = true
	s.trust[roleArn] = trust
}

// AllowRole creates a role whose trust policy lets Roles Anywhere assume it
// with any certificate the profile and trust anchor accept (RoleCondition
// narrows it).
func (s *Server) AllowRole(roleArn string) {
	s.PutRole(roleArn, iampolicy.Document{Version: iampolicy.Version, Statement: []iampolicy.Statement{{
		Effect: "Allow", Principal: map[string]iampolicy.Strings{"Service": {"rolesanywhere.amazonaws.com"}},
		Action: rolesAnywhereActions,
	}}})
}

// RoleCondition adds a StringEquals condition to every Allow statement of
// roleArn's trust policy: key is a condition key
// ("aws:PrincipalTag/x509Subject/CN", "aws:SourceArn", …), value what it
// must equal. Without a role yet, it makes one as AllowRole does.
func (s *Server) RoleCondition(roleArn, key, value string) {
	s.mu.Lock()
	_, ok := s.trust[roleArn]
	s.mu.Unlock()
	if !ok {
		s.AllowRole(roleArn)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	doc := s.trust[roleArn]
	for i, st := range doc.Statement {
		if st.Effect != "Allow" {
			continue
		}
		cond := map[string]map[string]iampolicy.Strings{}
		for op, keys := range st.Condition {
			cond[op] = map[string]iampolicy.Strings{}
			for k, v := range keys {
				cond[op][k] = v
			}
		}
		// ArnEquals on aws:SourceArn and StringEquals on the same key would both apply.
		for op := range cond {
			delete(cond[op], key)
		}
		if cond["StringEquals"] == nil {
			cond["StringEquals"] = map[string]iampolicy.Strings{}
		}
		cond["StringEquals"][key] = iampolicy.Strings{value}
		doc.Statement[i].Condition = cond
	}
	s.trust[roleArn] = doc
}

// PutRolePolicy attaches (or replaces) the permission policy name to roleArn.
func (s *Server) PutRolePolicy(roleArn, name string, doc iampolicy.Document) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.policies[roleArn] == nil {
		s.policies[roleArn] = map[string]iampolicy.Document{}
	}
	s.policies[roleArn][name] = doc
}

// trusts reports whether roleArn's trust policy lets Roles Anywhere assume
// it for a certificate with these principal tags (aws:SourceArn included).
func (s *Server) trusts(roleArn string, tags map[string]string) bool {
	s.mu.Lock()
	doc, ok := s.trust[roleArn]
	s.mu.Unlock()
	if !ok {
		return false
	}
	for _, a := range rolesAnywhereActions {
		req := iampolicy.Request{Action: a, PrincipalService: "rolesanywhere.amazonaws.com", Context: tags}
		if iampolicy.Evaluate(req, doc) != iampolicy.Allow {
			return false
		}
	}
	return true
}

// authorize evaluates the session role's permission policies for action on
// resource; it returns "" when allowed, else IAM's refusal text.
func (s *Server) authorize(sess session, action, resource string) string {
	s.mu.Lock()
	docs := make([]iampolicy.Document, 0, len(s.policies[sess.role]))
	for _, d := range s.policies[sess.role] {
		docs = append(docs, d)
	}
	s.mu.Unlock()
	if len(docs) == 0 {
		return ""
	}
	d := iampolicy.Evaluate(iampolicy.Request{Action: action, Resource: resource}, docs...)
	if d == iampolicy.Allow {
		return ""
	}
	why := "because no identity-based policy allows the " + action + " action"
	if d == iampolicy.ExplicitDeny {
		why = "with an explicit deny in an identity-based policy"
	}
	roleName := sess.role[strings.LastIndex(sess.role, "/")+1:]
	return fmt.Sprintf("User: arn:aws:sts::%s:assumed-role/%s/%s is not authorized to perform: %s on resource: %s %s",
		s.AccountID, roleName, sess.name, action, resource, why)
}

// jsonRequestResources are the resources a JSON-protocol call acts on, as
// IAM authorizes it.
func (s *Server) jsonRequestResources(service, op string, in map[string]any) []string {
	str := func(k string) string { v, _ := in[k].(string); return v }
	arn := func(svc, res string) string {
		return fmt.Sprintf("arn:aws:%s:%s:%s:%s", svc, s.Region, s.AccountID, res)
	}
	switch service {
	case "secretsmanager":
		id := str("SecretId")
		if op == "CreateSecret" {
			id = str("Name")
		}
		if op == "ListSecrets" || id == "" {
			return []string{"*"}
		}
		if strings.HasPrefix(id, "arn:") {
			return []string{id}
		}
		s.mu.Lock()
		sec, ok := s.secrets[id]
		s.mu.Unlock()
		if ok {
			return []string{sec.arn}
		}
		// A secret that does not exist yet is authorized as the ARN it would
		// get (the name, "-" and six characters): a policy on the name lets
		// the call through to answer ResourceNotFoundException.
		return []string{arn("secretsmanager", "secret:"+id+"-000000")}
	case "ecr":
		switch op {
		case "GetAuthorizationToken":
			return []string{"*"}
		case "CreateRepository":
			return []string{arn("ecr", "repository/"+str("repositoryName"))}
		}
		names, _ := in["repositoryNames"].([]any)
		if len(names) == 0 {
			return []string{arn("ecr", "repository/*")}
		}
		var out []string
		for _, n := range names {
			v, _ := n.(string)
			out = append(out, arn("ecr", "repository/"+v))
		}
		return out
	case "sqs":
		name := str("QueueName")
		if u := str("QueueUrl"); u != "" {
			name = u[strings.LastIndex(u, "/")+1:]
		}
		return []string{arn("sqs", name)}
	case "kms":
		id := str("KeyId")
		if strings.HasPrefix(id, "arn:") {
			return []string{id}
		}
		return []string{arn("kms", "key/"+id)}
	}
	return []string{"*"}
}

// s3Request is the action and resource of a path-style S3 request.
func s3Request(r *http.Request) (action, resource string) {
	p, err := url.PathUnescape(strings.TrimPrefix(r.URL.Path, "/"))
	if err != nil {
		p = strings.TrimPrefix(r.URL.Path, "/")
	}
	bucket, key, hasKey := strings.Cut(p, "/")
	if bucket == "" {
		return "s3:ListAllMyBuckets", "*"
	}
	if !hasKey || key == "" {
		switch r.Method {
		case http.MethodPut:
			return "s3:CreateBucket", "arn:aws:s3:::" + bucket
		case http.MethodDelete:
			return "s3:DeleteBucket", "arn:aws:s3:::" + bucket
		}
		// HeadBucket and ListObjects both need s3:ListBucket.
		return "s3:ListBucket", "arn:aws:s3:::" + bucket
	}
	switch r.Method {
	case http.MethodPut, http.MethodPost:
		return "s3:PutObject", "arn:aws:s3:::" + bucket + "/" + key
	case http.MethodDelete:
		return "s3:DeleteObject", "arn:aws:s3:::" + bucket + "/" + key
	}
	return "s3:GetObject", "arn:aws:s3:::" + bucket + "/" + key
}
