-- Fast path of the ExternalSecret check (see Script.Shipped in
-- lua/manifest.go): a list of conditions whose first Ready condition that is
-- True or False is True (Healthy), or False (Degraded) with a reason other than
-- SecretSyncedError or a creationTimestamp of the usual form long past the
-- grace period, and whose message is a string of at most 4 KiB or absent. Every
-- other object falls through to health.lua, which is the specification; this
-- file only returns what health.lua would. More than 256 conditions
-- (sfMaxConditions) fall through unread.
--
-- "Long past": the 20-byte creationTimestamp sorts before the time five days
-- ago, formatted as RFC 3339. Every 20-byte string health.lua parses is within
-- a few days of what it sorts as (a day of 31 in a shorter month, a space for
-- the "T"), and os.date may format in the controller's zone (up to 14 hours
-- off); a string it cannot parse is Degraded there too.
local st = obj.status
local cs = type(st) == "table" and st.conditions
if type(cs) == "table" and cs[257] == nil then
  local r
  for _, c in ipairs(cs) do
    if type(c) ~= "table" then
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
    local md = obj.metadata
    local t = type(md) == "table" and md.creationTimestamp
    if r.reason ~= "SecretSyncedError" or type(md) ~= "table" or t == nil
        or type(t) == "string" and #t == 20 and t < require("os").date("!%Y-%m-%dT%H:%M:%SZ", require("os").time() - 432000) then
      return { status = "Degraded", message = m }
    end
  end
end
