-- Fast path of the Onboarding check (see Script.Shipped in lua/manifest.go): a
-- current status (observedGeneration not behind) whose conditions are a list of
-- tables with string types, in which every boundary is True: Healthy, with the
-- Ready condition's message when it is True and its message a string of at
-- most 4 KiB. Every other object falls through to health.lua, which is the
-- specification; this file only returns what health.lua would.
local st = obj.status
local cs = type(st) == "table" and st.conditions
local md = obj.metadata
if type(cs) == "table" and type(md) == "table" and (type(md.generation) ~= "number"
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
  for _, n in ipairs({ "Identity", "Secrets", "Certificates", "Registry", "Queues", "Storage", "Workload" }) do
    local c = by and by[n]
    if not c or c.status ~= "True" then
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
