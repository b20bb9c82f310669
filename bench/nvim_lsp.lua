-- `fairspec lsp` driven by Neovim's built-in LSP client (headless); run by bench/nvim_lsp.py, which
-- copies examples/adult to a temporary folder and sets:
--   FAIRSPEC_NVIM_SPEC    the copy of adult.fair to open
--   FAIRSPEC_NVIM_CMD     the server command, words joined by a tab
--   FAIRSPEC_NVIM_OUT     where to write the results (one JSON object)
-- Every check is recorded as {name, ok, got}; nothing here decides the exit status (the runner does).
-- Written for Neovim 0.7 (Debian bookworm) and later: only APIs 0.7 has.

local spec = os.getenv("FAIRSPEC_NVIM_SPEC")
local out_path = os.getenv("FAIRSPEC_NVIM_OUT")
local cmd = vim.split(os.getenv("FAIRSPEC_NVIM_CMD"), "\t", { plain = true })
local WAIT = tonumber(os.getenv("FAIRSPEC_NVIM_WAIT") or "") or 120000 -- a guard against a hung server, never a speed requirement (ms)

local results, log, final_text = {}, {}, nil
if os.getenv("FAIRSPEC_NVIM_LOG") then vim.lsp.set_log_level("debug") end -- every message, in the folder's cache/nvim/lsp.log
local function check(name, ok, got)
  table.insert(results, { name = name, ok = ok and true or false, got = got })
end
local function note(s) table.insert(log, s) end

local function finish()
  local f = io.open(out_path, "w")
  f:write(vim.fn.json_encode({ checks = results, log = log, final_text = final_text, nvim = tostring(vim.version().major) .. "." ..
    tostring(vim.version().minor) .. "." .. tostring(vim.version().patch) }))
  f:close()
  vim.cmd("qall!")
end

local ok_run, err_run = pcall(function()
  -- every publication, as the server sent it (LSP units), then Neovim's own handler
  local published = {}
  local handlers = {
    ["textDocument/publishDiagnostics"] = function(err, result, ctx, config)
      table.insert(published, result)
      return vim.lsp.diagnostic.on_publish_diagnostics(err, result, ctx, config)
    end,
  }
  vim.cmd("edit " .. vim.fn.fnameescape(spec))
  local buf = vim.api.nvim_get_current_buf()
  local uri = vim.uri_from_bufnr(buf)
  local id = vim.lsp.start_client({ name = "fairspec", cmd = cmd, root_dir = vim.fn.fnamemodify(spec, ":h"),
    handlers = handlers, flags = { debounce_text_changes = 0 } })
  vim.lsp.buf_attach_client(buf, id)
  local client = vim.lsp.get_client_by_id(id)
  check("the client started", client ~= nil and vim.wait(WAIT, function() return client.initialized end), nil)
  note("offset encoding: " .. tostring(client.offset_encoding))

  local function lines() return vim.api.nvim_buf_get_lines(buf, 0, -1, false) end
  local function last_for(u)
    for i = #published, 1, -1 do if published[i].uri == u then return published[i] end end
  end
  -- the diagnostics of the buffer's current text (the server says which version it linted)
  local function settled()
    local want = vim.lsp.util.buf_versions[buf]
    vim.wait(WAIT, function()
      local p = last_for(uri)
      return p ~= nil and (p.version == nil or p.version == want)
    end, 20)
    local p = last_for(uri)
    return p and p.diagnostics or {}, p and p.version
  end
  local function find(needle, plain_from)
    for i, l in ipairs(lines()) do
      local s = string.find(l, needle, plain_from or 1, true)
      if s then return i - 1, s - 1 end -- 0-based row, byte column
    end
  end
  local function request(method, params)
    local r = client.request_sync(method, params, WAIT, buf)
    return r and r.result, r and r.err
  end
  local function pos_params(row, byte_col)
    vim.api.nvim_win_set_cursor(0, { row + 1, byte_col })
    return vim.lsp.util.make_position_params()
  end
  local function errors(diags)
    local n = 0
    for _, d in ipairs(diags) do if d.severity == 1 then n = n + 1 end end
    return n
  end
  -- the texts Neovim underlines for a code's diagnostics (its own conversion of the server's ranges
  -- to bytes), sorted, joined by " | "; the first one alone is returned too
  local function underlined(code)
    local got = {}
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      local c = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
      if c == code and d.lnum == d.end_lnum then
        local l = vim.api.nvim_buf_get_lines(buf, d.lnum, d.lnum + 1, false)[1]
        table.insert(got, string.sub(l, d.col + 1, d.end_col))
      end
    end
    table.sort(got)
    return table.concat(got, " | "), got[1]
  end

  -- 1. diagnostics of the example as it is
  local diags = settled()
  check("open: no errors in the example", errors(diags) == 0, #diags .. " diagnostics")
  local original = table.concat(lines(), "\n")

  -- 2. hover on a feature, a model and a metric
  local row, col = find("groups sex x older")
  local h = request("textDocument/hover", pos_params(row, col + #"groups "))
  local hv = h and h.contents and (h.contents.value or h.contents) or ""
  check("hover on a feature (sex)", type(hv) == "string" and hv:find("feature", 1, true) ~= nil, hv)
  row, col = find("statistical_parity(dt")
  h = request("textDocument/hover", pos_params(row, col + 2))
  hv = h and h.contents and (h.contents.value or h.contents) or ""
  check("hover on a metric (statistical_parity)", type(hv) == "string" and hv:find("statistical", 1, true) ~= nil, hv)

  -- 3. completion after `groups ` (features and groups in scope)
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, { "property typing {", "  statistical_parity(mlp, groups ", "}" })
  settled()
  row = #lines() - 2
  local c = request("textDocument/completion", pos_params(row, #"  statistical_parity(mlp, groups "))
  local labels = {}
  for _, it in ipairs((c and (c.items or c)) or {}) do labels[it.label] = true end
  check("completion after 'groups ' offers sex and older", labels["sex"] and labels["older"],
    vim.tbl_keys(labels))
  vim.api.nvim_buf_set_lines(buf, -4, -1, false, {})

  -- 4. a misspelt group, its diagnostic, the quick fix applied by Neovim
  row, col = find("sex x older")
  vim.api.nvim_buf_set_text(buf, row, col + #"sex x ", row, col + #"sex x older", { "oldr" })
  diags = settled()
  local u = underlined("FS205")
  check("FS205 underlines the misspelt name", u == "oldr", u)
  local lsp_d
  for _, x in ipairs(diags) do if x.code == "FS205" then lsp_d = x end end
  local actions = lsp_d and request("textDocument/codeAction", { textDocument = { uri = uri },
    range = lsp_d.range, context = { diagnostics = { lsp_d } } }) or {}
  check("a quick fix is offered", #actions == 1, actions[1] and actions[1].title)
  if actions[1] then vim.lsp.util.apply_workspace_edit(actions[1].edit, client.offset_encoding) end
  diags = settled()
  check("the quick fix restores the text", table.concat(lines(), "\n") == original and errors(diags) == 0,
    lines()[row + 1])

  -- 5. formatting
  row, col = find("group older = age >= 40")
  vim.api.nvim_buf_set_lines(buf, row, row + 1, false, { "group   older =   age>=40" })
  settled()
  vim.lsp.buf.formatting_sync(nil, WAIT)
  check("formatting restores the line", lines()[row + 1] == "group older = age >= 40", lines()[row + 1])
  check("formatting changes nothing else", table.concat(lines(), "\n") == original, nil)

  -- 6. rename a group through Neovim's own rename (prepareRename, then rename, applied by Neovim),
  --    right after an edit (formatting) that the server has not linted yet
  row, col = find("group older")
  vim.api.nvim_win_set_cursor(0, { row + 1, col + #"group " })
  vim.lsp.buf.rename("senior")
  vim.wait(WAIT, function() return table.concat(lines(), "\n"):find("groups sex x senior", 1, true) ~= nil end, 20)
  local text = table.concat(lines(), "\n")
  local changed = {}
  for i, x in ipairs(lines()) do if x:find("senior", 1, true) or x:find("older", 1, true) then table.insert(changed, x) end end
  check("rename: declaration and use renamed, nothing else changed", text == (original:gsub("older", "senior")),
    changed)
  diags = settled()
  check("rename: still no errors", errors(diags) == 0, #diags)

  -- 7. non-ASCII text before an error on the same line (a feature set whose categories hold emoji,
  --    CJK and a ZWJ sequence): typed as a whole line, then inserted before an error by incremental
  --    edits (Neovim sends them in UTF-16 units), then the quick fix, then a multi-line edit
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, { "features E {",
    '  c : {"😀中文é", "🎉🎉 日本", "👩‍👩‍👧", ab} protected', "}", 'group e1 = c == "😀中文é" or c == "abx"' })
  diags = settled()
  u = underlined("FS206")
  check('FS206 after emoji+CJK typed on its line: the underline is "abx"', u == '"abx"', u)
  local last = #lines() - 1
  vim.api.nvim_buf_set_lines(buf, last, last + 1, false, { 'group e1 = c == "abx"' })
  settled()
  vim.api.nvim_buf_set_text(buf, last, #"group e1 = ", last, #"group e1 = ", { 'c == "🎉🎉 日本" or ' })
  diags = settled()
  u = underlined("FS206")
  check('FS206 after emoji+CJK inserted before it: the underline is "abx"', u == '"abx"', u)
  lsp_d = nil
  for _, x in ipairs(diags) do if x.code == "FS206" then lsp_d = x end end
  actions = lsp_d and request("textDocument/codeAction", { textDocument = { uri = uri },
    range = lsp_d.range, context = { diagnostics = { lsp_d } } }) or {}
  if actions[1] then vim.lsp.util.apply_workspace_edit(actions[1].edit, client.offset_encoding) end
  check("the quick fix after the emoji replaces exactly \"abx\"",
    lines()[last + 1] == 'group e1 = c == "🎉🎉 日本" or c == "ab"', lines()[last + 1])
  diags = settled()
  check("the fixed text has no error", errors(diags) == 0, #diags)
  -- hover on the second `c`, after the emoji, asked in Neovim's units
  local l = lines()[last + 1]
  local b = string.find(l, "or c", 1, true) + #"or "
  h = request("textDocument/hover", pos_params(last, b - 1))
  hv = h and h.contents and (h.contents.value or h.contents) or ""
  check("hover after the emoji lands on c", type(hv) == "string" and hv:find("`c`", 1, true) ~= nil, hv)
  -- a multi-line edit with a ZWJ sequence: the error moves down a line and keeps its text
  vim.api.nvim_buf_set_text(buf, last, #"group e1 = ", last, #"group e1 = ", { "", '  c == "👩‍👩‍👧" or ' })
  l = lines()[last + 2]
  b = string.find(l, '"ab"', 1, true)
  vim.api.nvim_buf_set_text(buf, last + 1, b - 1, last + 1, b - 1 + #'"ab"', { '"abz"' })
  settled()
  u = underlined("FS206")
  check('FS206 after a ZWJ emoji on a new line: the underline is "abz"', u == '"abz"', u)
  -- formatting the whole buffer with all that in it (the runner checks the result is the
  -- formatter's fixed point: no stray or lost characters)
  vim.lsp.buf.formatting_sync(nil, WAIT)
  settled()
  u = underlined("FS206")
  check('formatting keeps the FS206 on "abz"', u == '"abz"', u)
  final_text = table.concat(lines(), "\n") .. "\n"

  -- 8. document symbols and definition
  local syms = request("textDocument/documentSymbol", { textDocument = { uri = uri } }) or {}
  check("document symbols", #syms > 5, #syms)
  row, col = find("groups sex x senior")
  local def = row and request("textDocument/definition", pos_params(row, col + #"groups sex x "))
  def = def and (def[1] or def)
  check("definition of senior is its declaration",
    def and def.range and lines()[def.range.start.line + 1]:find("group senior", 1, true) ~= nil, def)

  client.stop()
  vim.wait(WAIT, function() return client.is_stopped() end, 20)
end)
if not ok_run then check("the script ran", false, tostring(err_run)) end
finish()
