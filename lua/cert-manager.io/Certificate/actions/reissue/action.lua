-- Re-trigger issuance exactly as `cmctl renew` does: set the Issuing
-- condition True with reason ManuallyTriggered. cert-manager's issuing
-- controller then creates a new CertificateRequest at once, past the
-- failure backoff; the Certificate and its current Secret stay as they are.
-- Argo CD writes a change to status through the status subresource. The
-- condition is replaced in place, never appended: Argo CD v2.14's action
-- code cannot return a longer list than it was given (discovery offers the
-- action only when cert-manager left an Issuing condition after a failure).
local os = require("os")
local now = os.date("!%Y-%m-%dT%H:%M:%SZ")
if type(obj.status) ~= "table" or type(obj.status.conditions) ~= "table" then
  error("no status conditions: the certificate is not in a failed issuance")
end
if obj.status.conditions[257] ~= nil then
  error("more than 256 status conditions: not a certificate cert-manager wrote")
end
local issuing = {
  type = "Issuing",
  status = "True",
  reason = "ManuallyTriggered",
  message = "Certificate re-issuance manually triggered",
  lastTransitionTime = now,
}
if type(obj.metadata) == "table" and obj.metadata.generation ~= nil then
  issuing.observedGeneration = obj.metadata.generation
end
local replaced = false
for i, c in ipairs(obj.status.conditions) do
  if type(c) == "table" and c.type == "Issuing" then
    obj.status.conditions[i] = issuing
    replaced = true
  end
end
if not replaced then
  error("no Issuing condition to re-trigger: the certificate is not in a failed issuance")
end
return obj
