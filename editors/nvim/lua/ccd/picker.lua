--- Choosing a session (`vim.ui.select`, so any UI plugin that overrides it
--- applies) and what to do with it; searching what was said in sessions
--- (`sessions.search`) and choosing a hit.

local rpc = require('ccd.rpc')

local M = {}

local function short(id)
  return (id or ''):sub(1, 8)
end
M.short = short

--- `cwd` with the home directory written `~`.
local function tilde(path)
  if not path then
    return '-'
  end
  local home = vim.env.HOME
  if home and home ~= '' and home ~= '/' then
    if path == home then
      return '~'
    end
    if path:sub(1, #home + 1) == home .. '/' then
      return '~' .. path:sub(#home + 1)
    end
  end
  return path
end
M.tilde = tilde

local function ctx(s)
  if type(s.context_percent) ~= 'number' then
    return '-'
  end
  return ('%d%%'):format(math.floor(s.context_percent + 0.5))
end

--- A size in bytes, short, powers of 1024 (`812`, `34K`, `5.2M`, `1.1G`),
--- as `ccd ls` writes it.
local function size(n)
  local k = 1024
  if n < k then
    return tostring(math.floor(n))
  elseif n < k * k then
    return ('%dK'):format(math.floor(n / k + 0.5))
  end
  local v, u = n / (k * k), 'M'
  if n >= k * k * k then
    v, u = n / (k * k * k), 'G'
  end
  if v < 10 then
    return ('%.1f%s'):format(v, u)
  end
  return ('%d%s'):format(math.floor(v + 0.5), u)
end
M.size = size

--- The memory column: what a live session's processes use (`cost`, from
--- the daemon's samples); `-` when dead or not measured.
local function mem(s)
  if type(s.cost) ~= 'table' or type(s.cost.memory_bytes) ~= 'number' then
    return '-'
  end
  return size(s.cost.memory_bytes)
end

--- A token count as `ccd ls` writes it (`950`, `12k`, `1.2M`, `34M`,
--- `1.2G`).
local function tokens_text(n)
  if n < 1e3 then
    return tostring(math.floor(n))
  elseif n < 1e6 then
    return ('%dk'):format(math.floor(n / 1e3))
  elseif n < 1e7 then
    return ('%.1fM'):format(n / 1e6)
  elseif n < 1e9 then
    return ('%dM'):format(math.floor(n / 1e6))
  end
  return ('%.1fG'):format(n / 1e9)
end
M.tokens_text = tokens_text

--- Dollars as `ccd ls` writes them (`$0.42`, `$1234`), `+` after them
--- when a model has no price (the figure is a lower bound).
local function dollars_text(usd, lower_bound)
  local s = usd >= 1000 and ('$%.0f'):format(usd) or ('$%.2f'):format(usd)
  return lower_bound and (s .. '+') or s
end
M.dollars_text = dollars_text

--- The tokens column: the conversation's tokens (`usage`, all four kinds
--- added); `-` when the daemon does not count them.
local function tokens(s)
  if type(s.usage) ~= 'table' or type(s.usage.total_tokens) ~= 'number' then
    return '-'
  end
  return tokens_text(s.usage.total_tokens)
end

--- The dollars column; `-` when not counted.
local function dollars(s)
  if type(s.usage) ~= 'table' or type(s.usage.cost_usd) ~= 'number' then
    return '-'
  end
  local unpriced = type(s.usage.unpriced) == 'table' and #s.usage.unpriced > 0
  return dollars_text(s.usage.cost_usd, unpriced)
end

--- The status column: ccd's lifecycle for sessions it holds when it says
--- more than Claude Code's status (needs-attention, starting, exited).
local function status(s)
  if type(s.ccd) == 'table' and type(s.ccd.permission_prompt) == 'string' then
    return 'permission'
  end
  local lc = s.ccd and s.ccd.lifecycle
  if lc == 'needs-attention' or lc == 'starting' or lc == 'trust' or lc == 'exited' or lc == 'failed' then
    return lc
  end
  return s.status or '-'
end

--- The columns of one session: short id, state, status, ctx %, memory,
--- tokens, dollars, cwd, title.
function M.columns(s)
  return {
    short(s.session_id),
    s.state or '?',
    status(s),
    ctx(s),
    mem(s),
    tokens(s),
    dollars(s),
    tilde(s.cwd),
    s.title or s.name or '',
  }
end

--- The aligned columns (the rest follow, separated).
local ALIGNED = 7

--- One line per session, columns aligned across `sessions`; led by the
--- host (`s.host`, set by `list`) when a session is on another machine.
function M.format(sessions)
  local rows, widths = {}, {}
  local hostw = 0
  for _, s in ipairs(sessions) do
    if s.host and s.host ~= 'local' then
      hostw = 1
    end
  end
  if hostw > 0 then
    for _, s in ipairs(sessions) do
      hostw = math.max(hostw, vim.fn.strdisplaywidth(s.host or 'local'))
    end
  end
  for i, s in ipairs(sessions) do
    rows[i] = M.columns(s)
    for c = 1, ALIGNED do
      widths[c] = math.max(widths[c] or 0, vim.fn.strdisplaywidth(rows[i][c]))
    end
  end
  local lines = {}
  for i, r in ipairs(rows) do
    local parts = {}
    for c = 1, ALIGNED do
      local pad = widths[c] - vim.fn.strdisplaywidth(r[c])
      -- numbers right-aligned, words left-aligned
      parts[c] = c >= 4 and (string.rep(' ', pad) .. r[c]) or (r[c] .. string.rep(' ', pad))
    end
    local cwd, title = r[ALIGNED + 1], r[ALIGNED + 2]
    lines[i] = table.concat(parts, '  ') .. '  ' .. cwd .. (title ~= '' and ('  ' .. title) or '')
    if hostw > 0 then
      local h = sessions[i].host or 'local'
      lines[i] = h .. string.rep(' ', hostw - vim.fn.strdisplaywidth(h)) .. '  ' .. lines[i]
    end
  end
  return lines
end

--- Lists sessions through the daemon: `cb(err, sessions)`.
--- opts: `live_only`, `cwd`, `limit` (default the `list_limit` option).
function M.list(opts, cb)
  local cfg = require('ccd').config
  opts = opts or {}
  local params = { limit = opts.limit or cfg.list_limit }
  if opts.live_only ~= nil then
    params.live_only = opts.live_only
  elseif cfg.live_only then
    params.live_only = true
  end
  params.cwd = opts.cwd
  local client = rpc.shared()
  client:request('sessions.list', params, function(err, res)
    if err then
      return cb(err)
    end
    local sessions = (res and res.sessions) or {}
    -- Which machine, as `ccd ls` says it (its `host` field).
    local host = client:host_label()
    for _, s in ipairs(sessions) do
      s.host = host
    end
    cb(nil, sessions, res)
  end)
end

--- Lists sessions and lets the user choose one: `cb(session)` (a session
--- object of `sessions.list`), not called when cancelled or on error.
function M.pick(opts, cb)
  opts = opts or {}
  M.list(opts, function(err, sessions)
    if err then
      return vim.notify('ccd: cannot list sessions: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
    if #sessions == 0 then
      return vim.notify('ccd: no sessions', vim.log.levels.INFO)
    end
    local lines = M.format(sessions)
    local index = {}
    for i, s in ipairs(sessions) do
      index[s] = lines[i]
    end
    local host = rpc.shared():host_label()
    vim.ui.select(sessions, {
      prompt = opts.prompt or (host == 'local' and 'ccd session' or ('ccd session on ' .. host)),
      kind = 'ccd.session',
      format_item = function(s)
        return index[s]
      end,
    }, function(choice)
      if choice then
        cb(choice)
      end
    end)
  end)
end

--- Text from a transcript made one line that cannot drive the UI: control
--- characters (escapes, newlines, tabs) and the invisible formatting marks
--- (bidi overrides) become a space, runs of spaces one.
local function one_line(text)
  text = tostring(text or '')
  text = text:gsub('[%z\1-\31\127]', ' ')
  -- C1 controls (U+0080-U+009F), bidi marks and overrides, isolates.
  for _, mark in ipairs({
    '\194[\128-\159]',
    '\226\128[\142\143\170-\174]',
    '\226\129[\166-\169]',
  }) do
    text = text:gsub(mark, ' ')
  end
  return (text:gsub('  +', ' '))
end
M.one_line = one_line

--- `s` cut to at most `n` characters (UTF-8), from its end when `tail`.
local function cut(s, n, tail)
  local len = vim.fn.strchars(s)
  if len <= n then
    return s
  end
  if tail then
    return '…' .. vim.fn.strcharpart(s, len - n, n)
  end
  return vim.fn.strcharpart(s, 0, n) .. '…'
end

--- A hit's snippet on one line, the match in [brackets] (as `ccd search`
--- marks it), at most 40 characters either side.
function M.snippet(hit)
  local sn = hit.snippet or {}
  return cut(one_line(sn.before), 40, true) .. '[' .. one_line(sn.matched) .. ']' .. cut(one_line(sn.after), 40, false)
end

--- One line per hit: short id, state, when (`YYYY-MM-DD HH:MM`), folder,
--- the snippet; led by the host when it is another machine.
function M.format_hits(hits)
  local lines = {}
  local w = { 0, 0, 0 }
  local rows = {}
  for i, h in ipairs(hits) do
    local when = type(h.timestamp) == 'string' and h.timestamp:sub(1, 16):gsub('T', ' ') or '-'
    rows[i] = { short(h.session_id), h.state or '?', when, one_line(tilde(h.folder)) }
    for c = 1, 3 do
      w[c] = math.max(w[c], vim.fn.strdisplaywidth(rows[i][c]))
    end
  end
  for i, r in ipairs(rows) do
    local parts = {}
    for c = 1, 3 do
      parts[c] = r[c] .. string.rep(' ', w[c] - vim.fn.strdisplaywidth(r[c]))
    end
    local host = hits[i].host
    local lead = (host and host ~= 'local') and (one_line(host) .. '  ') or ''
    lines[i] = lead .. table.concat(parts, '  ') .. '  ' .. r[4] .. '  ' .. M.snippet(hits[i])
  end
  return lines
end

--- Searches what was said in the sessions (`sessions.search`): `cb(err,
--- hits, result)`. opts: `scope` ('all', 'live', 'dead'), `cwd`, `regex`,
--- `limit` (default the `search_limit` option).
function M.search(query, opts, cb)
  local cfg = require('ccd').config
  opts = opts or {}
  local params = {
    query = query,
    scope = opts.scope,
    cwd = opts.cwd,
    regex = opts.regex,
    limit = opts.limit or cfg.search_limit,
  }
  local client = rpc.shared()
  client:request('sessions.search', params, function(err, res)
    if err then
      return cb(err)
    end
    local hits = (res and res.hits) or {}
    local host = client:host_label()
    for _, h in ipairs(hits) do
      h.host = host
    end
    cb(nil, hits, res)
  end)
end

--- Searches and lets the user choose a hit: `cb(hit)` (a hit of
--- `sessions.search`: `session_id`, `state`, `folder`, `snippet`, ...),
--- not called when cancelled, on error or with no hit.
function M.pick_hit(query, opts, cb)
  opts = opts or {}
  M.search(query, opts, function(err, hits, res)
    if err then
      return vim.notify('ccd: cannot search: ' .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
    end
    if #hits == 0 then
      return vim.notify(('ccd: no conversation says %q'):format(query), vim.log.levels.INFO)
    end
    local lines = M.format_hits(hits)
    local index = {}
    for i, h in ipairs(hits) do
      index[h] = lines[i]
    end
    local more = res and res.truncated and '+' or ''
    vim.ui.select(hits, {
      prompt = opts.prompt or ('ccd search %q (%d%s)'):format(query, #hits, more),
      kind = 'ccd.search',
      format_item = function(h)
        return index[h]
      end,
    }, function(choice)
      if choice then
        cb(choice)
      end
    end)
  end)
end

M.actions = { 'attach', 'observe', 'fork', 'kill' }

--- What can be done with `session`: `approve` and `deny` first while ccd
--- holds it on a permission prompt.
function M.actions_for(session)
  local prompt = type(session.ccd) == 'table' and session.ccd.permission_prompt
  if type(prompt) == 'string' then
    return vim.list_extend({ 'approve', 'deny' }, M.actions), prompt
  end
  return M.actions, nil
end

--- Asks what to do with `session` and does it. Approve and deny answer
--- the prompt the listing showed (its id), never a later one.
function M.actions_menu(session)
  local ccd = require('ccd')
  local id = session.session_id
  local actions, prompt = M.actions_for(session)
  local title = session.title or tilde(session.cwd)
  if prompt and session.ccd.permission then
    title = ('%s; asks: %s'):format(title, session.ccd.permission)
  end
  vim.ui.select(actions, {
    prompt = ('%s (%s)'):format(short(id), title),
    kind = 'ccd.action',
  }, function(action)
    if action == 'approve' or action == 'deny' then
      ccd[action](id, { prompt = prompt })
    elseif action then
      ccd[action](id)
    end
  end)
end

return M
