-- Fast path of the Onboarding check (see Script.Shipped in lua/manifest.go): a
-- current status (observedGeneration not behind) whose conditions are a
-- non-empty list of tables with string types. Walking the boundaries in order:
-- all True is Healthy, with the Ready condition's message when it is True and
-- its message a string of at most 4 KiB; the first one not True is "not
-- checked yet", or, when False with a message that is a string of 1 byte to
-- 4 KiB, Degraded (Progressing when pending) with that message (compiled only
-- then, as health.lua is). Every other object falls through to health.lua,
-- which is the specification; this file only returns what health.lua would.
-- More than 256 conditions (sfMaxConditions) fall through unread.
local st = obj.status
local cs = type(st) == "table" and st.conditions
local md = obj.metadata
if type(cs) == "table" and cs[1] ~= nil and cs[257] == nil and type(md) == "table" and (type(md.generation) ~= "number"
    or type(st.observedGeneration) ~= "number" or st.observedGeneration >= md.generation) then
  local by = {}
  for _, c in ipairs(cs) do
    local k = type(c) == "table" and c.type
    if type(k) ~= "string" then
      by = nil
      break
    end
    if by[k] == nil then
      by[k] = c
    end
  end
  local B = { "Identity", "Secrets", "Certificates", "Registry", "Queues", "Storage", "Workload" }
  for i = 1, 7 do
    local c = by and by[B[i]]
    if not c or c.status ~= "True" then
      local hs = by and loadstring([==[
local c, n = ...
local L = { "identity", "secrets", "certificates", "registry", "queues", "storage", "workload" }
if not c or c.status ~= "False" then
  return { status = "Progressing", message = L[n] .. ": not checked yet" }
end
local m, r = c.message, c.reason
if type(m) == "string" and m ~= "" and #m <= 4096 then
  if n > 1 then
    m = m .. " (" .. table.concat(L, ", ", 1, n - 1) .. " ready)"
  end
  if c.severity == "Warning" or type(r) == "string" and r >= "Pending" and r < "Pendinh" then
    return { status = "Progressing", message = L[n] .. ": " .. m }
  end
  return { status = "Degraded", message = L[n] .. ": " .. m }
end
]==])(c, i)
      if hs then
        return hs
      end
      by = nil
      break
    end
  end
  if by then
    local r = by.Ready
    local m = type(r) == "table" and r.status == "True" and r.message
    if not m or m == "" then
      return { status = "Healthy", message = "all onboarding contracts hold" }
    end
    if type(m) == "string" and #m <= 4096 then
      return { status = "Healthy", message = m }
    end
  end
end
