-- Fast path of the Certificate check (see Script.Shipped in lua/manifest.go):
-- a list of conditions, none Issuing=True, whose first Ready condition that is
-- True or False is True (Healthy), or False with no failed-issuance backoff
-- (Degraded), and whose message is a string of at most 4 KiB or absent. Every
-- other object falls through to health.lua, which is the specification; this
-- file only returns what health.lua would.
local st = obj.status
local cs = type(st) == "table" and st.conditions
if type(cs) == "table" then
  local r
  for _, c in ipairs(cs) do
    if type(c) ~= "table" or c.type == "Issuing" and c.status == "True" then
      r = 0
      break
    end
    if r == nil and c.type == "Ready" and (c.status == "True" or c.status == "False") then
      r = c
    end
  end
  local m = type(r) == "table" and r.message
  if m == nil or type(m) == "string" and #m <= 4096 then
    if r.status == "True" then
      return { status = "Healthy", message = m }
    end
    local l = st.lastFailureTime
    if st.failedIssuanceAttempts == nil or l == nil or l == "" then
      return { status = "Degraded", message = m }
    end
  end
end
