--- A client of the ccd daemon's socket API (docs/protocol.md): JSON-RPC 2.0,
--- one message per line, over a Unix socket opened with `vim.uv` pipes —
--- or, with the `host` option (`ssh://[user@]host[:port]`), over the stdin
--- and stdout of `ssh -T ... -- <remote_ccd> dial-stdio` spawned with
--- `vim.uv` pipes: the same protocol to the remote user's own daemon.
---
--- Every callback runs in the main loop (never in a libuv "fast" context),
--- so it may call any Nvim API. Callbacks take `(err, result)`; `err` is the
--- JSON-RPC error object `{ code, message, data }`, or `{ message }` for a
--- transport failure.

local uv = vim.uv or vim.loop

local M = {}

M.VERSION = '0.1.0'
M.CLIENT_NAME = 'ccd.nvim/' .. M.VERSION
--- The protocol versions this client speaks.
M.PROTOCOL = { min = 1, max = 1 }

local config = {
  ccd_bin = 'ccd',
  socket_dir = nil,
  autostart = true,
  start_timeout_ms = 5000,
  --- Another machine: `ssh://[user@]host[:port]` (nil: this one).
  host = nil,
  --- The ssh program and its first options.
  ssh_command = { 'ssh' },
  --- The ccd run on the remote host.
  remote_ccd = 'ccd',
  --- Connecting through ssh (and `hello`) may take this long.
  ssh_timeout_ms = 30000,
}

--- Sets the options every new client uses (`ccd_bin`, `socket_dir`,
--- `autostart`, `start_timeout_ms`, `host`, `ssh_command`, `remote_ccd`,
--- `ssh_timeout_ms`).
function M.configure(opts)
  config = vim.tbl_extend('force', config, opts or {})
  if config.socket_dir then
    config.socket_dir = vim.fn.expand(config.socket_dir)
  end
end

function M.config()
  return config
end

--- The socket's directory: the `socket_dir` option, else `$CCD_SOCKET_DIR`,
--- else `$XDG_RUNTIME_DIR/ccd` (when absolute), else `/tmp/ccd-<uid>`.
function M.socket_dir(dir)
  dir = dir or config.socket_dir
  if dir and dir ~= '' then
    return dir
  end
  local env = os.getenv('CCD_SOCKET_DIR')
  if env and env ~= '' then
    return env
  end
  local xdg = os.getenv('XDG_RUNTIME_DIR')
  if xdg and xdg:sub(1, 1) == '/' then
    return xdg .. '/ccd'
  end
  return '/tmp/ccd-' .. uv.getuid()
end

function M.socket_path(dir)
  return M.socket_dir(dir) .. '/ccd.sock'
end

--- Decodes one JSON line; JSON `null` becomes `nil`.
local function strip_nil(v)
  if v == vim.NIL then
    return nil
  end
  if type(v) == 'table' then
    for k, x in pairs(v) do
      v[k] = strip_nil(x)
    end
  end
  return v
end

local function decode(line)
  local ok, v = pcall(vim.json.decode, line, { luanil = { object = true, array = true } })
  if not ok then
    ok, v = pcall(vim.json.decode, line)
  end
  if not ok then
    return nil, v
  end
  -- Older Nvims ignore `luanil`: drop the vim.NIL they leave either way.
  return strip_nil(v)
end

local in_main = vim.schedule_wrap

---@class ccd.Client
---@field state 'closed'|'connecting'|'ready'
---@field hello table|nil the `hello` result once connected
local Client = {}
Client.__index = Client

--- A new client (not yet connected: the first request connects).
--- opts: `socket_dir`, `ccd_bin`, `autostart` (start the daemon when no
--- socket answers; default from `configure`), `start_timeout_ms`.
function M.new(opts)
  opts = opts or {}
  return setmetatable({
    opts = opts,
    state = 'closed',
    next_id = 1,
    pending = {},
    waiters = {},
    handlers = {},
    connect_hooks = {},
    close_hooks = {},
    parts = {},
  }, Client)
end

local shared
--- The client the plugin's commands and event notifications share.
function M.shared()
  if not shared then
    shared = M.new()
  end
  return shared
end

function Client:_opt(name)
  local v = self.opts[name]
  if v == nil then
    v = config[name]
  end
  return v
end

--- Parses `ssh://[user@]host[:port]`: `{ user, host, port }` or nil, why.
function M.parse_host(url)
  local rest = type(url) == 'string' and url:match('^ssh://(.+)$')
  if not rest then
    return nil, ('invalid host %q (expected ssh://[user@]host[:port])'):format(tostring(url))
  end
  rest = rest:gsub('/$', '')
  local user, hostport = rest:match('^(.*)@([^@]*)$')
  if not user then
    hostport = rest
  end
  local host, port = hostport:match('^%[(.+)%]:?(%d*)$')
  if not host then
    host, port = hostport:match('^([^:]+):?(%d*)$')
  end
  local safe = '^[%w%._%-%%:]+$'
  if not host or host == '' or host:sub(1, 1) == '-' or not host:match(safe) then
    return nil, ('invalid host %q: bad host name'):format(url)
  end
  if user and (user == '' or user:sub(1, 1) == '-' or not user:match('^[%w%._%-]+$')) then
    return nil, ('invalid host %q: bad user name'):format(url)
  end
  if port == '' then
    port = nil
  end
  return { user = user, host = host, port = port and tonumber(port) or nil }
end

--- The name shown for this client's machine: `local`, else the host
--- without `ssh://` (as `ccd ls` shows it).
function Client:host_label()
  local h = self:_opt('host')
  if not h or h == '' or h == 'local' then
    return 'local'
  end
  return (h:gsub('^ssh://', ''))
end

--- The ssh command line for the `host` option (program first).
function Client:ssh_argv()
  local t, why = M.parse_host(self:_opt('host'))
  if not t then
    return nil, why
  end
  local argv = vim.deepcopy(self:_opt('ssh_command') or { 'ssh' })
  table.insert(argv, '-T')
  if t.port then
    vim.list_extend(argv, { '-p', tostring(t.port) })
  end
  table.insert(argv, (t.user and (t.user .. '@') or '') .. t.host)
  table.insert(argv, '--')
  local ccd = self:_opt('remote_ccd') or 'ccd'
  if not ccd:match('^[%w/%._%-~+,=@%%]+$') then
    ccd = "'" .. ccd:gsub("'", [['\'']]) .. "'"
  end
  vim.list_extend(argv, { ccd, 'dial-stdio' })
  return argv
end

function Client:socket_dir()
  return M.socket_dir(self:_opt('socket_dir'))
end

function Client:socket_path()
  return self:socket_dir() .. '/ccd.sock'
end

--- Registers `fn(params)` for notifications named `method` (e.g. `event`).
--- Returns a function that unregisters it.
function Client:on(method, fn)
  self.handlers[method] = self.handlers[method] or {}
  table.insert(self.handlers[method], fn)
  return function()
    for i, f in ipairs(self.handlers[method] or {}) do
      if f == fn then
        table.remove(self.handlers[method], i)
        return
      end
    end
  end
end

--- `fn(hello_result)` after every successful (re)connection.
function Client:on_connect(fn)
  table.insert(self.connect_hooks, fn)
end

--- `fn(reason)` when an established connection ends.
function Client:on_close(fn)
  table.insert(self.close_hooks, fn)
end

function Client:is_connected()
  return self.state == 'ready'
end

--- Starts `ccd daemon` detached from Nvim (its own session, so it outlives
--- the editor), as the CLI does when no daemon answers.
function Client:_start_daemon(dir)
  local bin = self:_opt('ccd_bin')
  local handle
  local ok, h, err = pcall(uv.spawn, bin, {
    args = { '--socket-dir', dir, 'daemon', '--background' },
    detached = true,
  }, function(code)
    self.daemon_exit = code
    if handle and not handle:is_closing() then
      handle:close()
    end
  end)
  if not ok then
    return false, tostring(h)
  end
  if not h then
    return false, tostring(err)
  end
  handle = h
  handle:unref()
  return true
end

function Client:_finish_connect(err)
  local waiters = self.waiters
  self.waiters = {}
  for _, w in ipairs(waiters) do
    w(err, self.hello)
  end
end

function Client:_fail_connect(message)
  self.state = 'closed'
  self:_finish_connect({ message = message })
end

--- Connects (if not connected) and says `hello`; `cb(err, hello_result)`.
--- opts: `autostart` overrides the client's option for this attempt.
function Client:connect(opts, cb)
  cb = cb or function() end
  if self.state == 'ready' then
    return cb(nil, self.hello)
  end
  table.insert(self.waiters, cb)
  if self.state == 'connecting' then
    return
  end
  self.state = 'connecting'
  local host = self:_opt('host')
  if host and host ~= '' and host ~= 'local' then
    return self:_connect_ssh()
  end
  local autostart = self:_opt('autostart')
  if opts and opts.autostart ~= nil then
    autostart = opts.autostart
  end
  local dir = self:socket_dir()
  local path = dir .. '/ccd.sock'
  local timeout = self:_opt('start_timeout_ms')
  local deadline
  local started = false
  self.daemon_exit = nil

  local attempt
  attempt = function()
    local pipe = uv.new_pipe(false)
    local ok, perr = pcall(
      pipe.connect,
      pipe,
      path,
      in_main(function(err)
        if not err then
          return self:_on_pipe(pipe)
        end
        if not pipe:is_closing() then
          pipe:close()
        end
        if autostart and not started then
          started = true
          deadline = uv.hrtime() + timeout * 1e6
          local sok, serr = self:_start_daemon(dir)
          if not sok then
            return self:_fail_connect(
              ('cannot start the ccd daemon (%s): %s'):format(self:_opt('ccd_bin'), serr)
            )
          end
        end
        if started and uv.hrtime() < deadline then
          return vim.defer_fn(attempt, 100)
        end
        local why = ('cannot connect to %s: %s'):format(path, err)
        if started then
          why = why .. (' (started `%s daemon`%s; its log is in $CCD_STATE_DIR)'):format(
            self:_opt('ccd_bin'),
            self.daemon_exit and (', which exited with ' .. self.daemon_exit) or ''
          )
        end
        self:_fail_connect(why)
      end)
    )
    if not ok then
      if not pipe:is_closing() then
        pipe:close()
      end
      self:_fail_connect(('cannot connect to %s: %s'):format(path, perr))
    end
  end
  attempt()
end

--- Connects through ssh: `ssh ... dial-stdio` with its stdin and stdout on
--- `vim.uv` pipes; its stderr is kept and shown if it ends before `hello`.
function Client:_connect_ssh()
  local argv, why = self:ssh_argv()
  if not argv then
    return self:_fail_connect(why)
  end
  local stdin, stdout, stderr = uv.new_pipe(false), uv.new_pipe(false), uv.new_pipe(false)
  local errtext = {}
  local handle
  local function close_all()
    for _, p in ipairs({ stdin, stdout, stderr }) do
      if not p:is_closing() then
        p:close()
      end
    end
  end
  local ok, h, perr = pcall(uv.spawn, argv[1], {
    args = vim.list_slice(argv, 2),
    stdio = { stdin, stdout, stderr },
  }, in_main(function(code)
    self.ssh_exit = code
    if handle and not handle:is_closing() then
      handle:close()
    end
    if self.ssh == handle then
      self.ssh = nil
    end
    if self.state == 'connecting' and self.ssh_pending == handle then
      local text = vim.trim(table.concat(errtext))
      local why
      if code == 127 then
        why = ('%s: `%s` was not found on the remote machine (ssh exited 127); set remote_ccd to its path'):format(
          self:host_label(),
          self:_opt('remote_ccd') or 'ccd'
        )
      else
        why = ('%s: ssh exited with %d before the daemon answered'):format(self:host_label(), code)
      end
      if text ~= '' then
        why = why .. ': ' .. text
      end
      self.ssh_pending = nil
      self.pending = {}
      self:_close_pipe()
      close_all()
      self:_fail_connect(why)
    end
  end))
  if not ok or not h then
    close_all()
    return self:_fail_connect(('cannot run %s: %s'):format(argv[1], tostring(ok and perr or h)))
  end
  handle = h
  self.ssh = h
  self.ssh_pending = h
  stderr:read_start(function(_, data)
    if data and #errtext < 64 then
      table.insert(errtext, data)
    end
  end)
  self:_on_pipe(stdout, stdin)
  local t = self:_opt('ssh_timeout_ms')
  vim.defer_fn(function()
    if self.state == 'connecting' and self.ssh_pending == h then
      self.ssh_pending = nil
      self:_close_pipe()
      close_all()
      if not h:is_closing() then
        h:kill('sigterm')
      end
      self:_fail_connect(('%s: no answer through ssh within %d ms'):format(self:host_label(), t))
    end
  end, t)
end

function Client:_on_pipe(pipe, wpipe)
  self.pipe = pipe
  self.wpipe = wpipe
  self.parts = {}
  pipe:read_start(in_main(function(err, data)
    if self.pipe ~= pipe then
      return
    end
    if err then
      self:_closed('read error: ' .. err)
    elseif data then
      self:_on_data(data)
    elseif self.ssh_pending then
      -- ssh ended before `hello` was answered: its exit status says why
      -- (the exit callback reports it).
      pipe:read_stop()
    else
      self:_closed('the daemon closed the connection')
    end
  end))
  self:_send('hello', { client = M.CLIENT_NAME, protocol = M.PROTOCOL }, function(err, res)
    if err then
      self:_close_pipe()
      return self:_fail_connect('hello failed: ' .. (err.message or vim.inspect(err)))
    end
    self.hello = res
    self.state = 'ready'
    self.ssh_pending = nil
    for _, hook in ipairs(self.connect_hooks) do
      local ok, e = pcall(hook, res)
      if not ok then
        vim.notify('ccd: ' .. tostring(e), vim.log.levels.ERROR)
      end
    end
    self:_finish_connect(nil)
  end)
end

function Client:_on_data(data)
  local start = 1
  while true do
    local nl = data:find('\n', start, true)
    if not nl then
      break
    end
    local piece = data:sub(start, nl - 1)
    local line = piece
    if #self.parts > 0 then
      table.insert(self.parts, piece)
      line = table.concat(self.parts)
      self.parts = {}
    end
    self:_on_line(line)
    start = nl + 1
    if self.pipe == nil then
      return -- a handler closed the connection
    end
  end
  if start <= #data then
    table.insert(self.parts, data:sub(start))
  end
end

function Client:_on_line(line)
  if line:sub(-1) == '\r' then
    line = line:sub(1, -2)
  end
  if line == '' then
    return
  end
  local msg = decode(line)
  if type(msg) ~= 'table' then
    return
  end
  if msg.method and msg.id == nil then
    for _, fn in ipairs(vim.list_slice(self.handlers[msg.method] or {})) do
      local ok, e = pcall(fn, msg.params or {})
      if not ok then
        vim.notify(('ccd: %s handler: %s'):format(msg.method, e), vim.log.levels.ERROR)
      end
    end
    return
  end
  local cb = msg.id ~= nil and self.pending[msg.id]
  if not cb then
    return -- an answer to nothing we asked (e.g. an error with id null)
  end
  self.pending[msg.id] = nil
  if msg.error then
    cb(msg.error, nil)
  else
    cb(nil, msg.result)
  end
end

function Client:_send(method, params, cb)
  local id = self.next_id
  self.next_id = id + 1
  local msg = { jsonrpc = '2.0', id = id, method = method }
  if params and next(params) ~= nil then
    msg.params = params
  end
  self.pending[id] = cb
  ;(self.wpipe or self.pipe):write(vim.json.encode(msg) .. '\n', function(err)
    if err then
      vim.schedule(function()
        if self.pending[id] then
          self.pending[id] = nil
          cb({ message = 'write failed: ' .. err })
        end
      end)
    end
  end)
end

function Client:_close_pipe()
  local pipe, wpipe, ssh = self.pipe, self.wpipe, self.ssh
  self.pipe, self.wpipe, self.ssh = nil, nil, nil
  if pipe and not pipe:is_closing() then
    pipe:read_stop()
    pipe:close()
  end
  if wpipe and not wpipe:is_closing() then
    wpipe:close()
  end
  -- The ssh under a remote connection ends with it.
  if ssh and not ssh:is_closing() then
    ssh:kill('sigterm')
  end
end

function Client:_closed(reason)
  local was_ready = self.state == 'ready'
  self:_close_pipe()
  self.state = 'closed'
  self.hello = nil
  local pending = self.pending
  self.pending = {}
  for _, cb in pairs(pending) do
    cb({ message = reason })
  end
  if was_ready then
    for _, hook in ipairs(self.close_hooks) do
      pcall(hook, reason)
    end
  end
end

--- Closes the connection (pending requests fail; close hooks run).
function Client:close()
  if self.pipe then
    self:_closed('closed by the client')
  end
end

--- Sends a request, connecting first when needed; `cb(err, result)`.
function Client:request(method, params, cb)
  cb = cb or function() end
  self:connect(nil, function(err)
    if err then
      return cb(err)
    end
    self:_send(method, params, cb)
  end)
end

--- Sends a request and waits for its answer (at most `timeout_ms`, default
--- 5000). Returns `result, err`.
function Client:request_sync(method, params, timeout_ms)
  local done, res, err = false, nil, nil
  self:request(method, params, function(e, r)
    done, err, res = true, e, r
  end)
  if not vim.wait(timeout_ms or 5000, function()
    return done
  end, 10) then
    return nil, { message = ('%s: no answer within %d ms'):format(method, timeout_ms or 5000) }
  end
  return res, err
end

--- Connects and waits (see `request_sync`). Returns `hello_result, err`.
function Client:connect_sync(opts, timeout_ms)
  local done, res, err = false, nil, nil
  self:connect(opts, function(e, r)
    done, err, res = true, e, r
  end)
  local host = self:_opt('host')
  local base = (host and host ~= '' and host ~= 'local') and self:_opt('ssh_timeout_ms')
    or self:_opt('start_timeout_ms')
  local t = timeout_ms or (base + 1000)
  if not vim.wait(t, function()
    return done
  end, 10) then
    return nil, { message = ('no connection within %d ms'):format(t) }
  end
  return res, err
end

M.Client = Client

return M
