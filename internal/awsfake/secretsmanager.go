package awsfake

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Secrets Manager as its API reference describes it, for the calls
// spokeforge makes: errors are {"__type": Code, "Message": ...} with the
// reference's codes and HTTP 400; a ClientRequestToken is the VersionId of
// the version it creates, and repeating it with the same value changes
// nothing while a different value is ResourceExistsException; a new
// AWSCURRENT version moves AWSPREVIOUS to the version that had AWSCURRENT.

const smContentType = "application/x-amz-json-1.1"

var (
	smNameRE  = regexp.MustCompile(`^[A-Za-z0-9/_+=.@-]+$`)
	smTokenRE = regexp.MustCompile(`^[A-Za-z0-9-]+$`)
)

// Messages Secrets Manager answers with.
const (
	msgNotFound       = "Secrets Manager can't find the specified secret."
	msgMarkedDeletion = "You can't perform this operation on the secret because it was marked for deletion."
)

func smError(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Content-Type", smContentType)
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(http.StatusBadRequest)
	writeJSONBody(w, map[string]string{"__type": code, "Message": msg})
}

// validation answers ValidationException the way the service words a
// constraint violation.
func validation(w http.ResponseWriter, field, constraint string) {
	smError(w, "ValidationException", fmt.Sprintf("1 validation error detected: Value at '%s' failed to satisfy constraint: %s", field, constraint))
}

func (s *Server) secretsManager(w http.ResponseWriter, op string, in map[string]any) {
	str := func(k string) string { v, _ := in[k].(string); return v }
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UTC()
	// find resolves SecretId (a name or an ARN); a secret inside its
	// consistency window is not found yet.
	find := func() *secret {
		id := str("SecretId")
		sec, ok := s.secrets[id]
		if !ok {
			for _, x := range s.secrets {
				if x.arn == id {
					sec = x
				}
			}
		}
		if sec == nil || now.Before(sec.visible) {
			smError(w, "ResourceNotFoundException", msgNotFound)
			return nil
		}
		return sec
	}
	// live also refuses a secret scheduled for deletion.
	live := func() *secret {
		sec := find()
		if sec != nil && sec.deleted != nil {
			smError(w, "InvalidRequestException", msgMarkedDeletion)
			return nil
		}
		return sec
	}
	if op != "CreateSecret" && op != "ListSecrets" && str("SecretId") == "" {
		validation(w, "secretId", "Member must not be null")
		return
	}
	switch op {
	case "CreateSecret":
		name := str("Name")
		switch {
		case name == "":
			validation(w, "name", "Member must not be null")
			return
		case len(name) > 512:
			validation(w, "name", "Member must have length less than or equal to 512")
			return
		case !smNameRE.MatchString(name):
			smError(w, "InvalidParameterException", "Invalid name. Must be a valid name containing alphanumeric characters, or any of the following: -/_+=.@!")
			return
		}
		if !s.validValue(w, in) {
			return
		}
		tags, ok := parseTags(w, in["Tags"])
		if !ok {
			return
		}
		if old, ok := s.secrets[name]; ok {
			if old.deleted != nil {
				smError(w, "InvalidRequestException", "You can't create this secret because a secret with this name is already scheduled for deletion.")
				return
			}
			smError(w, "ResourceExistsException", "The operation failed because the secret "+name+" already exists.")
			return
		}
		sec := s.addSecretLocked(name)
		sec.visible = now.Add(s.smWindow)
		sec.description = str("Description")
		sec.tags = mergeTags(nil, tags)
		out := map[string]any{"ARN": sec.arn, "Name": name}
		if _, has := in["SecretString"]; has {
			id := str("ClientRequestToken")
			if id == "" {
				id = randomUUID()
			}
			sec.versions[id] = &version{value: str("SecretString"), stages: []string{"AWSCURRENT"}, created: now}
			out["VersionId"] = id
		}
		writeJSON(w, smContentType, out)
	case "GetSecretValue":
		sec := live()
		if sec == nil {
			return
		}
		id, stage := str("VersionId"), str("VersionStage")
		if id == "" && stage == "" {
			stage = "AWSCURRENT"
		}
		vid, v := sec.version(id, stage)
		if v == nil {
			msg := "Secrets Manager can't find the specified secret value for staging label: " + stage
			if id != "" {
				msg = "Secrets Manager can't find the specified secret value for VersionId: " + id
			}
			smError(w, "ResourceNotFoundException", msg)
			return
		}
		writeJSON(w, smContentType, map[string]any{"ARN": sec.arn, "Name": sec.name, "VersionId": vid,
			"SecretString": v.value, "VersionStages": v.stages, "CreatedDate": epoch(v.created)})
	case "PutSecretValue":
		sec := live()
		if sec == nil || !s.validValue(w, in) {
			return
		}
		if _, has := in["SecretString"]; !has {
			smError(w, "InvalidRequestException", "You must provide either SecretString or SecretBinary.")
			return
		}
		id := str("ClientRequestToken")
		if id == "" {
			id = randomUUID()
		}
		value := str("SecretString")
		if v, ok := sec.versions[id]; ok {
			if v.value != value {
				smError(w, "ResourceExistsException", "You can't modify an existing version, you can only create a new version.")
				return
			}
			// The same token and value again: the call is idempotent.
			writeJSON(w, smContentType, map[string]any{"ARN": sec.arn, "Name": sec.name, "VersionId": id, "VersionStages": v.stages})
			return
		}
		stages := []string{"AWSCURRENT"}
		if l, ok := in["VersionStages"].([]any); ok {
			stages = nil
			for _, x := range l {
				if st, ok := x.(string); ok {
					stages = append(stages, st)
				}
			}
		}
		v := &version{value: value, created: now}
		sec.versions[id] = v
		for _, st := range stages {
			sec.moveStage(st, id)
		}
		sec.changed = now
		writeJSON(w, smContentType, map[string]any{"ARN": sec.arn, "Name": sec.name, "VersionId": id, "VersionStages": v.stages})
	case "DescribeSecret":
		sec := find()
		if sec == nil {
			return
		}
		writeJSON(w, smContentType, sec.describe())
	case "TagResource":
		sec := live()
		if sec == nil {
			return
		}
		tags, ok := parseTags(w, in["Tags"])
		if !ok {
			return
		}
		if tags == nil {
			validation(w, "tags", "Member must not be null")
			return
		}
		sec.tags = mergeTags(sec.tags, tags)
		writeJSON(w, smContentType, map[string]any{})
	case "ListSecrets":
		s.listSecrets(w, in, now)
	case "DeleteSecret":
		sec := find()
		if sec == nil {
			return
		}
		if sec.deleted == nil {
			sec.deleted = &now
		}
		writeJSON(w, smContentType, map[string]any{"ARN": sec.arn, "Name": sec.name, "DeletionDate": epoch(sec.deleted.Add(30 * 24 * time.Hour))})
	default:
		smError(w, "InvalidAction", "awsfake Secrets Manager does not serve "+op)
	}
}

// validValue checks the ClientRequestToken and SecretString constraints.
func (s *Server) validValue(w http.ResponseWriter, in map[string]any) bool {
	if tok, ok := in["ClientRequestToken"].(string); ok && (len(tok) < 32 || len(tok) > 64 || !smTokenRE.MatchString(tok)) {
		validation(w, "clientRequestToken", "Member must have length greater than or equal to 32")
		return false
	}
	if v, ok := in["SecretString"].(string); ok && len(v) > 65536 {
		validation(w, "secretString", "Member must have length less than or equal to 65536")
		return false
	}
	return true
}

// version finds a version by id or by staging label.
func (sec *secret) version(id, stage string) (string, *version) {
	if id != "" {
		v := sec.versions[id]
		if v == nil || stage != "" && !contains(v.stages, stage) {
			return "", nil
		}
		return id, v
	}
	for vid, v := range sec.versions {
		if contains(v.stages, stage) {
			return vid, v
		}
	}
	return "", nil
}

// moveStage attaches stage to version id, taking it off the version that
// had it; moving AWSCURRENT gives that version AWSPREVIOUS.
func (sec *secret) moveStage(stage, id string) {
	for vid, v := range sec.versions {
		if vid == id || !contains(v.stages, stage) {
			continue
		}
		v.stages = remove(v.stages, stage)
		if stage == "AWSCURRENT" {
			for _, other := range sec.versions {
				other.stages = remove(other.stages, "AWSPREVIOUS")
			}
			v.stages = append(v.stages, "AWSPREVIOUS")
		}
	}
	v := sec.versions[id]
	if !contains(v.stages, stage) {
		v.stages = append(v.stages, stage)
	}
}

func (sec *secret) describe() map[string]any {
	out := map[string]any{"ARN": sec.arn, "Name": sec.name, "CreatedDate": epoch(sec.created), "LastChangedDate": epoch(sec.changed)}
	if sec.description != "" {
		out["Description"] = sec.description
	}
	if len(sec.tags) > 0 {
		tags := []any{}
		for _, t := range sec.tags {
			tags = append(tags, map[string]string{"Key": t.Key, "Value": t.Value})
		}
		out["Tags"] = tags
	}
	stages := map[string][]string{}
	for id, v := range sec.versions {
		if len(v.stages) > 0 {
			stages[id] = v.stages
		}
	}
	if len(stages) > 0 {
		out["VersionIdsToStages"] = stages
	}
	if sec.deleted != nil {
		out["DeletedDate"] = epoch(*sec.deleted)
	}
	return out
}

// listSecrets serves ListSecrets: filters (name, tag-key, tag-value,
// description: prefix matches, "!" negates; values of one filter are ORed,
// filters ANDed), MaxResults 1-100 and NextToken paging, in name order.
func (s *Server) listSecrets(w http.ResponseWriter, in map[string]any, now time.Time) {
	max := 100
	if m, ok := in["MaxResults"].(float64); ok {
		if m < 1 || m > 100 {
			validation(w, "maxResults", "Member must have value less than or equal to 100")
			return
		}
		max = int(m)
	}
	type filter struct {
		key    string
		values []string
	}
	var filters []filter
	if l, ok := in["Filters"].([]any); ok {
		for _, x := range l {
			m, _ := x.(map[string]any)
			f := filter{}
			f.key, _ = m["Key"].(string)
			vs, _ := m["Values"].([]any)
			for _, v := range vs {
				if sv, ok := v.(string); ok {
					f.values = append(f.values, sv)
				}
			}
			switch f.key {
			case "name", "tag-key", "tag-value", "description":
			default:
				smError(w, "InvalidParameterException", "awsfake ListSecrets does not filter on "+f.key)
				return
			}
			if len(f.values) == 0 || len(f.values) > 10 {
				validation(w, "filters.values", "Member must have length less than or equal to 10")
				return
			}
			filters = append(filters, f)
		}
	}
	match := func(sec *secret, f filter) bool {
		var fields []string
		switch f.key {
		case "name":
			fields = []string{sec.name}
		case "description":
			fields = []string{strings.ToLower(sec.description)}
		case "tag-key", "tag-value":
			for _, t := range sec.tags {
				if f.key == "tag-key" {
					fields = append(fields, t.Key)
				} else {
					fields = append(fields, t.Value)
				}
			}
		}
		for _, v := range f.values {
			neg := strings.HasPrefix(v, "!")
			v = strings.TrimPrefix(v, "!")
			if f.key == "description" {
				v = strings.ToLower(v)
			}
			hit := false
			for _, x := range fields {
				if strings.HasPrefix(x, v) {
					hit = true
				}
			}
			if hit != neg {
				return true
			}
		}
		return false
	}
	includeDeleted, _ := in["IncludePlannedDeletion"].(bool)
	var names []string
	for name, sec := range s.secrets {
		if now.Before(sec.visible) || sec.deleted != nil && !includeDeleted {
			continue
		}
		ok := true
		for _, f := range filters {
			ok = ok && match(sec, f)
		}
		if ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	start := 0
	if tok, _ := in["NextToken"].(string); tok != "" {
		b, err := base64.StdEncoding.DecodeString(tok)
		if err != nil {
			smError(w, "InvalidNextTokenException", "The NextToken value is invalid.")
			return
		}
		start = sort.SearchStrings(names, string(b))
	}
	out := map[string]any{}
	list := []any{}
	for i := start; i < len(names) && len(list) < max; i++ {
		d := s.secrets[names[i]].describe()
		if vs, ok := d["VersionIdsToStages"]; ok {
			d["SecretVersionsToStages"] = vs
			delete(d, "VersionIdsToStages")
		}
		list = append(list, d)
		if len(list) == max && i+1 < len(names) {
			out["NextToken"] = base64.StdEncoding.EncodeToString([]byte(names[i+1]))
		}
	}
	out["SecretList"] = list
	writeJSON(w, smContentType, out)
}

func parseTags(w http.ResponseWriter, raw any) ([]tag, bool) {
	if raw == nil {
		return nil, true
	}
	l, ok := raw.([]any)
	if !ok {
		smError(w, "SerializationException", "Tags must be a list")
		return nil, false
	}
	out := []tag{}
	for _, x := range l {
		m, _ := x.(map[string]any)
		k, _ := m["Key"].(string)
		v, _ := m["Value"].(string)
		if k == "" || len(k) > 128 || len(v) > 256 {
			validation(w, "tags.member.key", "Member must have length less than or equal to 128")
			return nil, false
		}
		out = append(out, tag{k, v})
	}
	if len(out) > 50 {
		smError(w, "InvalidParameterException", "The number of tags exceeds the limit of 50.")
		return nil, false
	}
	return out, true
}

// mergeTags sets each tag, keeping the others (TagResource's semantics).
func mergeTags(have, set []tag) []tag {
	for _, t := range set {
		found := false
		for i := range have {
			if have[i].Key == t.Key {
				have[i].Value, found = t.Value, true
			}
		}
		if !found {
			have = append(have, t)
		}
	}
	return have
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func remove(l []string, s string) []string {
	out := l[:0:0]
	for _, x := range l {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

func randomUUID() string {
	b := randomID(16)
	return b[0:8] + "-" + b[8:12] + "-" + b[12:16] + "-" + b[16:20] + "-" + b[20:32]
}
