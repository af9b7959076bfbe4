-- Fast path of the Certificate check (see Script.Shipped in lua/manifest.go):
-- a list of conditions, none Issuing=True, whose first Ready condition that is
-- True or False is True (Healthy), or False (Degraded), and whose message is a
-- string of at most 4 KiB or absent. A failed issuance in backoff is answered
-- here too when its attempt count is a number, lastFailureTime is what
-- Kubernetes writes (UTC, whole seconds) and the controller's os.date is in
-- UTC; that message is compiled only then. Every other object falls through to
-- health.lua, which is the specification; this file only returns what
-- health.lua would. More than 256 conditions (sfMaxConditions) fall through
-- unread.
local st = obj.status
local cs = type(st) == "table" and st.conditions
if type(cs) == "table" and cs[257] == nil then
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
    local n, l = st.failedIssuanceAttempts, st.lastFailureTime
    if n == nil or l == nil or l == "" then
      return { status = "Degraded", message = m }
    end
    if type(n) == "number" and n >= 1 and n < 1e15 and type(l) == "string" and #l == 20 then
      local hs = loadstring([==[
local n, l, m = ...
local os = require("os")
local F = "!%Y-%m-%dT%H:%M:%SZ"
local t = 0
for k = 34, 0, -1 do
  if os.date(F, t + 2 ^ k) <= l then
    t = t + 2 ^ k
  end
end
local md = obj.metadata
local ns, name = type(md) == "table" and md.namespace, type(md) == "table" and md.name
if ns == nil or ns == false or ns == "" then
  ns = "<namespace>"
end
if name == nil or name == false or name == "" then
  name = "<name>"
end
if os.date(F, t) ~= l or os.date("!%z", t) ~= "+0000" or type(ns) ~= "string" or #ns > 4096
    or type(name) ~= "string" or #name > 4096 then
  return nil
end
n = n - n % 1
local h = 32
if n < 6 then
  h = 2 ^ (n - 1)
end
local p = "s"
if n == 1 then
  p = ""
end
local s = "Issuance failed " .. n .. " time" .. p .. "; next automatic retry at " .. os.date(F, t + h * 3600) ..
    " (" .. h .. "h backoff after last failure at " .. l .. "); force a retry now with: cmctl renew -n " .. ns .. " " .. name
if m ~= nil and m ~= "" then
  s = s .. ". Last error: " .. m
end
return { status = "Degraded", message = s }
]==])(n, l, m)
      if hs then
        return hs
      end
    end
  end
end
