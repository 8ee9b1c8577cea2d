-- Baton's verify as an HAProxy action (Debian's haproxy 2.6, built with Lua 5.3): the auth
-- subrequest nginx makes with auth_request and Traefik with forwardAuth. Loaded by
-- haproxy.cfg (`lua-load`); docs/deploy.md, "HAProxy instead of nginx".
--
--   http-request lua.baton-verify <verify URL>
--
-- asks Baton (GET <verify URL>, e.g. http://127.0.0.1:8080/v1/verify?max_age=300) whether
-- the request may pass, with the client's Authorization, DPoP (every one: two proofs reach
-- Baton as two, and are refused) and User-Agent, and the original request as Baton reads it
-- from a trusted proxy: X-Original-Method and X-Original-URI (the client's method and
-- request-target, which a bound chain's DPoP proof names), X-Forwarded-Proto and
-- X-Forwarded-Host (the public origin), X-Forwarded-For and X-Real-IP (the client's
-- address, for Baton's audit). Nothing else the client sent reaches verify.
--
-- A 2xx answer sets the transaction variables txn.baton_user_id, txn.baton_username,
-- txn.baton_chain_id and txn.baton_auth_time from Baton's X-Baton-* answer headers;
-- haproxy.cfg sets the application's request headers from them. Any other answer ends the
-- transaction with Baton's answer as Baton sent it: status, WWW-Authenticate, DPoP-Nonce,
-- Retry-After, Cache-Control and the JSON body. No answer (Baton down, a timeout) ends it
-- with 503 unavailable and Retry-After: 1, in Baton's JSON shape.
--
-- Uses core.httpclient (HAProxy 2.5 and later); the token is only ever in the headers passed
-- on, never in a variable or a log line.

-- Baton's identity headers: answer header -> transaction variable.
local identity = {
    ["x-baton-user-id"] = "txn.baton_user_id",
    ["x-baton-username"] = "txn.baton_username",
    ["x-baton-chain-id"] = "txn.baton_chain_id",
    ["x-baton-auth-time"] = "txn.baton_auth_time",
}

-- The headers of a refusal that go back to the client.
local refusal_headers = { "www-authenticate", "dpop-nonce", "retry-after", "cache-control", "content-type", "x-baton-refused" }

-- The client's headers verify needs, as sent (every value of each).
local client_headers = { "authorization", "dpop", "user-agent" }

-- The values of a header table as a Lua list. HAProxy indexes request headers from 0; the
-- http client's answer headers likewise; pairs() takes either.
local function values(list)
    local out = {}
    if list == nil then return out end
    local keys = {}
    for key in pairs(list) do keys[#keys + 1] = key end
    table.sort(keys)
    for _, key in ipairs(keys) do out[#out + 1] = list[key] end
    return out
end

-- The answer header `name` (lower case) of `answer`, its first value or nil.
local function answer_header(answer, name)
    for key, list in pairs(answer.headers or {}) do
        if string.lower(key) == name then return values(list)[1] end
    end
    return nil
end

-- Ends the transaction with `status`, `headers` and `body`.
local function reply(txn, status, headers, body)
    local answer = txn:reply({ status = status, body = body })
    for name, value in pairs(headers) do answer:add_header(name, value) end
    txn:done(answer)
end

local function verify(txn, url)
    local request = txn.http:req_get_headers()
    local headers = {}
    for _, name in ipairs(client_headers) do
        local list = values(request[name])
        if #list > 0 then headers[name] = list end
    end
    local scheme = "http"
    if txn.f:ssl_fc() == true or txn.f:ssl_fc() == 1 then scheme = "https" end
    local source = txn.f:src()
    headers["x-original-method"] = { txn.f:method() }
    headers["x-original-uri"] = { txn.f:url() }
    headers["x-forwarded-proto"] = { scheme }
    headers["x-forwarded-host"] = values(request["host"])
    headers["x-forwarded-for"] = { source }
    headers["x-real-ip"] = { source }

    local answer = core.httpclient():get({ url = url, headers = headers, timeout = 10000 })
    local status = answer and tonumber(answer.status) or 0
    if status >= 200 and status < 300 then
        for header, variable in pairs(identity) do
            local value = answer_header(answer, header)
            if value ~= nil then txn:set_var(variable, value) end
        end
        return
    end
    if status == 0 or status >= 500 then
        reply(txn, 503, { ["content-type"] = "application/json", ["retry-after"] = "1" },
              '{"error":"unavailable","error_description":"Baton is unavailable; retry shortly."}')
        return
    end
    local headers_out = {}
    for _, name in ipairs(refusal_headers) do
        local value = answer_header(answer, name)
        if value ~= nil then headers_out[name] = value end
    end
    reply(txn, status, headers_out, answer.body or "")
end

core.register_action("baton-verify", { "http-req" }, verify, 1)
