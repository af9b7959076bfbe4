-- Health check for argoproj.io/Application (app-of-apps).
--
-- Argo CD removed Application health from its built-ins in 1.8; this is the
-- documented snippet made defensive: a child Application's own
-- status.health is copied, a missing health is Progressing, and a last
-- operation that ended in phase Failed or Error is Degraded with the
-- operation's message.
--
-- Runs in Argo CD's default sandbox (no string/math libraries) and never
-- raises: every field is type-checked before use.

local VALID = { Healthy = true, Progressing = true, Degraded = true, Suspended = true, Missing = true, Unknown = true }

local function text(v)
  if type(v) == "string" then
    if #v > 4096 then
      return "(message omitted: " .. tostring(#v) .. " bytes)"
    end
    return v
  end
  if type(v) == "number" then
    return tostring(v)
  end
  return nil
end

local function health()
  local status = obj.status
  if type(status) ~= "table" then
    return { status = "Progressing", message = "Waiting for application health" }
  end
  local op = status.operationState
  if type(op) == "table" and (op.phase == "Failed" or op.phase == "Error") then
    local msg = text(op.message)
    if msg == nil or msg == "" then
      msg = "operation " .. op.phase
    end
    return { status = "Degraded", message = msg }
  end
  local h = status.health
  if type(h) == "table" and type(h.status) == "string" and VALID[h.status] then
    return { status = h.status, message = text(h.message) or "" }
  end
  return { status = "Progressing", message = "Waiting for application health" }
end

local ok, hs = pcall(health)
if ok and type(hs) == "table" then
  return hs
end
return { status = "Unknown", message = "spokeforge health script failed" }
