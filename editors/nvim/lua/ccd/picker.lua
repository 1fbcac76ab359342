--- Choosing a session (`vim.ui.select`, so any UI plugin that overrides it
--- applies) and what to do with it.

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
--- cwd, title.
function M.columns(s)
  return {
    short(s.session_id),
    s.state or '?',
    status(s),
    ctx(s),
    mem(s),
    tilde(s.cwd),
    s.title or s.name or '',
  }
end

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
    for c = 1, 5 do
      widths[c] = math.max(widths[c] or 0, vim.fn.strdisplaywidth(rows[i][c]))
    end
  end
  local lines = {}
  for i, r in ipairs(rows) do
    local parts = {}
    for c = 1, 5 do
      local pad = widths[c] - vim.fn.strdisplaywidth(r[c])
      -- numbers right-aligned, words left-aligned
      parts[c] = c >= 4 and (string.rep(' ', pad) .. r[c]) or (r[c] .. string.rep(' ', pad))
    end
    lines[i] = table.concat(parts, '  ') .. '  ' .. r[6] .. (r[7] ~= '' and ('  ' .. r[7]) or '')
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
