-- Health check for cert-manager.io/Certificate.
--
-- Same semantics as Argo CD's built-in check (Issuing=True -> Progressing;
-- otherwise the first Ready condition: False -> Degraded, True -> Healthy;
-- else Progressing "Waiting for certificate"), plus one refinement:
--
-- Ready=False with status.failedIssuanceAttempts >= 1 and
-- status.lastFailureTime set, while Issuing is not True, is a failed issuance
-- sitting in cert-manager's exponential backoff (1h * 2^(attempts-1), at most
-- 32h, counted from lastFailureTime). Nothing will happen until that time, so
-- the message names the attempt count, the next retry time and the command
-- that forces a retry now (cmctl renew sets Issuing=True/ManuallyTriggered,
-- which bypasses the backoff).
--
-- Runs in Argo CD's default sandbox (no string/math libraries) and never
-- raises: every field is type-checked before use.

-- BEGIN sfcore (from lua/_lib/sfcore.lua by `go run ./lua/gen`: the helpers this script uses)
-- Argo CD runs custom health scripts without the string and math libraries
-- (only base, table, package and a safe os with time/date). Strings have no
-- metatable there, so s:sub / s:find do not exist. The helpers below only use
-- the length operator, concatenation and byte-wise string comparison, which
-- the VM implements natively, and stay well inside the 1 s script budget.

-- CH[b + 1] is the one-byte string whose byte value is b.
local CH = {
  "\0", "\1", "\2", "\3", "\4", "\5", "\6", "\7", "\8", "\9", "\10", "\11", "\12", "\13", "\14", "\15",
  "\16", "\17", "\18", "\19", "\20", "\21", "\22", "\23", "\24", "\25", "\26", "\27", "\28", "\29", "\30", "\31",
  "\32", "\33", "\34", "\35", "\36", "\37", "\38", "\39", "\40", "\41", "\42", "\43", "\44", "\45", "\46", "\47",
  "\48", "\49", "\50", "\51", "\52", "\53", "\54", "\55", "\56", "\57", "\58", "\59", "\60", "\61", "\62", "\63",
  "\64", "\65", "\66", "\67", "\68", "\69", "\70", "\71", "\72", "\73", "\74", "\75", "\76", "\77", "\78", "\79",
  "\80", "\81", "\82", "\83", "\84", "\85", "\86", "\87", "\88", "\89", "\90", "\91", "\92", "\93", "\94", "\95",
  "\96", "\97", "\98", "\99", "\100", "\101", "\102", "\103", "\104", "\105", "\106", "\107", "\108", "\109", "\110", "\111",
  "\112", "\113", "\114", "\115", "\116", "\117", "\118", "\119", "\120", "\121", "\122", "\123", "\124", "\125", "\126", "\127",
  "\128", "\129", "\130", "\131", "\132", "\133", "\134", "\135", "\136", "\137", "\138", "\139", "\140", "\141", "\142", "\143",
  "\144", "\145", "\146", "\147", "\148", "\149", "\150", "\151", "\152", "\153", "\154", "\155", "\156", "\157", "\158", "\159",
  "\160", "\161", "\162", "\163", "\164", "\165", "\166", "\167", "\168", "\169", "\170", "\171", "\172", "\173", "\174", "\175",
  "\176", "\177", "\178", "\179", "\180", "\181", "\182", "\183", "\184", "\185", "\186", "\187", "\188", "\189", "\190", "\191",
  "\192", "\193", "\194", "\195", "\196", "\197", "\198", "\199", "\200", "\201", "\202", "\203", "\204", "\205", "\206", "\207",
  "\208", "\209", "\210", "\211", "\212", "\213", "\214", "\215", "\216", "\217", "\218", "\219", "\220", "\221", "\222", "\223",
  "\224", "\225", "\226", "\227", "\228", "\229", "\230", "\231", "\232", "\233", "\234", "\235", "\236", "\237", "\238", "\239",
  "\240", "\241", "\242", "\243", "\244", "\245", "\246", "\247", "\248", "\249", "\250", "\251", "\252", "\253", "\254", "\255",
}

-- sfFloor(x) is math.floor(x) built from the native % operator.
local function sfFloor(x)
  return x - x % 1
end

-- sfBytes returns the byte values of the first `limit` bytes of s. A byte is
-- recovered by binary search: with p the already decoded prefix, p .. CH[b+1]
-- <= s holds exactly when b <= s[k].
local function sfBytes(s, limit)
  local out = {}
  if type(s) ~= "string" then
    return out
  end
  local n = #s
  if n > limit then
    n = limit
  end
  local prefix = ""
  for k = 1, n do
    local lo, hi = 0, 255
    while lo < hi do
      local x = lo + hi + 1
      local mid = (x - x % 2) / 2
      if prefix .. CH[mid + 1] <= s then
        lo = mid
      else
        hi = mid - 1
      end
    end
    out[k] = lo
    prefix = prefix .. CH[lo + 1]
  end
  return out
end

-- sfText converts a status field into a message string, truncating anything
-- over 4 KiB to its first 256 bytes (cut on a UTF-8 boundary). Non-scalar
-- values yield nil.
local function sfText(v)
  if type(v) == "number" then
    return tostring(v)
  end
  if type(v) ~= "string" then
    return nil
  end
  local n = #v
  if n <= 4096 then
    return v
  end
  local b = sfBytes(v, 256)
  local k = #b
  local cut = k
  while cut > 0 and b[cut] >= 128 and b[cut] < 192 do
    cut = cut - 1
  end
  if cut > 0 and b[cut] >= 192 then
    local need = 2
    if b[cut] >= 240 then
      need = 4
    elseif b[cut] >= 224 then
      need = 3
    end
    if k - cut + 1 < need then
      k = cut - 1
    end
  end
  local parts = {}
  for i = 1, k do
    parts[i] = CH[b[i] + 1]
  end
  return table.concat(parts) .. "... (truncated, " .. tostring(n) .. " bytes)"
end

-- sfDaysFromCivil converts a proleptic Gregorian date to days since 1970-01-01.
local function sfDaysFromCivil(y, m, d)
  if m <= 2 then
    y = y - 1
  end
  local era = sfFloor(y / 400)
  local yoe = y - era * 400
  local mp = (m + 9) % 12
  local doy = sfFloor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + sfFloor(yoe / 4) - sfFloor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

-- sfParseTime parses an RFC 3339 timestamp ("2026-01-01T00:00:00Z",
-- optional fraction, "Z" or "+hh:mm"/"-hh:mm") into Unix seconds, or nil.
local function sfParseTime(s)
  if type(s) ~= "string" or #s < 20 or #s > 64 then
    return nil
  end
  local b = sfBytes(s, 64)
  local function num(i, j)
    local v = 0
    for k = i, j do
      local c = b[k]
      if c == nil or c < 48 or c > 57 then
        return nil
      end
      v = v * 10 + (c - 48)
    end
    return v
  end
  if b[5] ~= 45 or b[8] ~= 45 or (b[11] ~= 84 and b[11] ~= 116 and b[11] ~= 32) or b[14] ~= 58 or b[17] ~= 58 then
    return nil
  end
  local y, mo, d = num(1, 4), num(6, 7), num(9, 10)
  local h, mi, se = num(12, 13), num(15, 16), num(18, 19)
  if y == nil or mo == nil or d == nil or h == nil or mi == nil or se == nil then
    return nil
  end
  if mo < 1 or mo > 12 or d < 1 or d > 31 or h > 23 or mi > 59 or se > 60 then
    return nil
  end
  local i = 20
  if b[i] == 46 then
    i = i + 1
    while b[i] ~= nil and b[i] >= 48 and b[i] <= 57 do
      i = i + 1
    end
  end
  local offset = 0
  if (b[i] == 90 or b[i] == 122) and i == #b then
    offset = 0
  elseif (b[i] == 43 or b[i] == 45) and i + 5 == #b and b[i + 3] == 58 then
    local oh, om = num(i + 1, i + 2), num(i + 4, i + 5)
    if oh == nil or om == nil or oh > 23 or om > 59 then
      return nil
    end
    offset = oh * 3600 + om * 60
    if b[i] == 45 then
      offset = -offset
    end
  else
    return nil
  end
  return sfDaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - offset
end

-- sfFormatTime renders Unix seconds as an RFC 3339 UTC timestamp.
local function sfFormatTime(t)
  local function pad(v, w)
    local s = tostring(v)
    while #s < w do
      s = "0" .. s
    end
    return s
  end
  t = sfFloor(t)
  local days = sfFloor(t / 86400)
  local secs = t - days * 86400
  local z = days + 719468
  local era = sfFloor(z / 146097)
  local doe = z - era * 146097
  local yoe = sfFloor((doe - sfFloor(doe / 1460) + sfFloor(doe / 36524) - sfFloor(doe / 146096)) / 365)
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + sfFloor(yoe / 4) - sfFloor(yoe / 100))
  local mp = sfFloor((5 * doy + 2) / 153)
  local d = doy - sfFloor((153 * mp + 2) / 5) + 1
  local m = mp + 3
  if mp >= 10 then
    m = mp - 9
  end
  if m <= 2 then
    y = y + 1
  end
  local h = sfFloor(secs / 3600)
  local mi = sfFloor((secs - h * 3600) / 60)
  local se = secs - h * 3600 - mi * 60
  return pad(y, 4) .. "-" .. pad(m, 2) .. "-" .. pad(d, 2) .. "T" .. pad(h, 2) .. ":" .. pad(mi, 2) .. ":" .. pad(se, 2) .. "Z"
end

-- sfConditions returns the condition tables of obj.status.conditions as an
-- array, accepting a list or a map of type -> condition; anything else gives {}.
local function sfConditions(status)
  local out = {}
  if type(status) ~= "table" or type(status.conditions) ~= "table" then
    return out
  end
  local conds = status.conditions
  for _, c in ipairs(conds) do
    if type(c) == "table" then
      out[#out + 1] = c
    end
  end
  if #out == 0 then
    for k, c in pairs(conds) do
      if type(c) == "table" then
        if c.type == nil and type(k) == "string" then
          local copy = {}
          for ck, cv in pairs(c) do
            copy[ck] = cv
          end
          copy.type = k
          c = copy
        end
        out[#out + 1] = c
      end
    end
  end
  return out
end
-- END sfcore

local function health()
  local status = obj.status
  local conds = sfConditions(status)

  -- Always handle Issuing first, like the built-in check.
  for _, c in ipairs(conds) do
    if c.type == "Issuing" and c.status == "True" then
      return { status = "Progressing", message = sfText(c.message) }
    end
  end

  for _, c in ipairs(conds) do
    if c.type == "Ready" and c.status == "False" then
      local hs = { status = "Degraded", message = sfText(c.message) }
      local attempts = status.failedIssuanceAttempts
      if type(attempts) == "string" then
        attempts = tonumber(attempts)
      end
      local last = status.lastFailureTime
      if type(attempts) == "number" and attempts >= 1 and attempts < 1e15 and last ~= nil and last ~= "" then
        attempts = sfFloor(attempts)
        local hours = 1
        for _ = 2, attempts do
          hours = hours * 2
          if hours >= 32 then
            hours = 32
            break
          end
        end
        local ns, name = "<namespace>", "<name>"
        local meta = obj.metadata
        if type(meta) == "table" then
          if type(meta.namespace) == "string" and meta.namespace ~= "" then
            ns = sfText(meta.namespace)
          end
          if type(meta.name) == "string" and meta.name ~= "" then
            name = sfText(meta.name)
          end
        end
        local when
        local t = sfParseTime(last)
        if t ~= nil then
          when = "next automatic retry at " .. sfFormatTime(t + hours * 3600) ..
              " (" .. tostring(hours) .. "h backoff after last failure at " .. sfFormatTime(t) .. ")"
        else
          local lastText = sfText(last) or "the last failure"
          when = "next automatic retry " .. tostring(hours) .. "h after " .. lastText
        end
        local plural = "s"
        if attempts == 1 then
          plural = ""
        end
        local prefix = "Issuance failed " .. tostring(attempts) .. " time" .. plural .. "; " .. when ..
            "; force a retry now with: cmctl renew -n " .. ns .. " " .. name
        if hs.message ~= nil and hs.message ~= "" then
          hs.message = prefix .. ". Last error: " .. hs.message
        else
          hs.message = prefix
        end
      end
      return hs
    end
    if c.type == "Ready" and c.status == "True" then
      return { status = "Healthy", message = sfText(c.message) }
    end
  end

  return { status = "Progressing", message = "Waiting for certificate" }
end

local ok, hs = pcall(health)
if ok and type(hs) == "table" then
  return hs
end
return { status = "Unknown", message = "spokeforge health script failed: " .. (sfText(hs) or "unknown error") }
