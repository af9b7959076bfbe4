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
  -- A child is Healthy for the parent's waves only once it is Synced, its
  -- health Healthy and no sync operation runs: Argo CD v3.4 no longer counts
  -- missing child resources as Progressing, which alone would let a wave
  -- go on before the child's objects exist.
  local running = type(op) == "table" and (op.phase == "Running" or op.phase == "Terminating")
  local sync = nil
  if type(status.sync) == "table" and type(status.sync.status) == "string" then
    sync = status.sync.status
  end
  local h = status.health
  if type(h) == "table" and type(h.status) == "string" and VALID[h.status] then
    if h.status == "Healthy" or h.status == "Missing" or h.status == "Unknown" then
      if running then
        return { status = "Progressing", message = "sync operation " .. op.phase }
      end
      if sync ~= "Synced" then
        return { status = "Progressing", message = "waiting for sync (" .. (text(sync) or "no sync status") .. ")" }
      end
    end
    return { status = h.status, message = text(h.message) or "" }
  end
  return { status = "Progressing", message = "Waiting for application health" }
end

local ok, hs = pcall(health)
if ok and type(hs) == "table" then
  return hs
end
return { status = "Unknown", message = "spokeforge health script failed" }
