-- Offer "reissue" only when the certificate's last issuance failed and
-- cert-manager is backing off (Ready False, a failure time, Issuing False
-- as cert-manager leaves it after a failure): the case the health check
-- reports with "force a retry now".
local actions = {}
local function backedOff()
  local status = obj.status
  if type(status) ~= "table" or type(status.conditions) ~= "table" then
    return false
  end
  -- More conditions than the health check reads (256): offer nothing.
  if status.conditions[257] ~= nil or status.lastFailureTime == nil or status.lastFailureTime == "" then
    return false
  end
  local notReady, failed = false, false
  for _, c in ipairs(status.conditions) do
    if type(c) == "table" then
      if c.type == "Issuing" then
        failed = c.status == "False"
      end
      if c.type == "Ready" and c.status == "False" then
        notReady = true
      end
    end
  end
  return notReady and failed
end
local ok, offer = pcall(backedOff)
if ok and offer then
  actions["reissue"] = { ["disabled"] = false }
end
return actions
