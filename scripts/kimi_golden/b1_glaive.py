"""B1_glaive: Kimi K2.5 tool-calling turns, written for this project (glaive-function-calling style).

Each sample is composed deterministically from the hand-written pieces below: a user request,
a short reasoning, optional content, and one or several calls whose arguments are written the
way models really write them (compact, spaced, multi-line, nested objects, odd spacing,
non-ASCII values). About one sample in eight carries a recorded provider response with a quirk.
"""

from __future__ import annotations

import json
import random

from .kimi_turn import Call, KimiIds, Turn, api_tool_calls, chat_response


def _fn(name, description, properties, required):
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


S = {"type": "string"}
N = {"type": "number"}
I = {"type": "integer"}
B = {"type": "boolean"}

TOOLS = {
    "get_weather": _fn("get_weather", "Current weather and a short forecast for a city.",
                       {"city": S, "units": {"type": "string", "enum": ["metric", "imperial"]}, "days": I}, ["city"]),
    "search_flights": _fn("search_flights", "Search one-way or return flights.",
                          {"origin": S, "destination": S, "date": S, "return_date": S,
                           "passengers": {"type": "object", "properties": {"adults": I, "children": I}},
                           "filters": {"type": "object"}}, ["origin", "destination", "date"]),
    "convert_currency": _fn("convert_currency", "Convert an amount between currencies.",
                            {"amount": N, "from": S, "to": S}, ["amount", "from", "to"]),
    "create_event": _fn("create_event", "Create a calendar event.",
                        {"title": S, "start": S, "end": S, "attendees": {"type": "array", "items": S},
                         "location": S, "reminder": {"type": "object"}}, ["title", "start"]),
    "send_email": _fn("send_email", "Send an email.", {"to": {"type": "array", "items": S}, "subject": S, "body": S, "cc": {"type": "array", "items": S}},
                      ["to", "subject", "body"]),
    "query_database": _fn("query_database", "Run a read-only SQL query against the analytics database.",
                          {"sql": S, "params": {"type": "array"}, "limit": I}, ["sql"]),
    "translate_text": _fn("translate_text", "Translate text between languages.",
                          {"text": S, "source_lang": S, "target_lang": S}, ["text", "target_lang"]),
    "get_stock_price": _fn("get_stock_price", "Latest price of a stock.", {"symbol": S, "exchange": S}, ["symbol"]),
    "book_restaurant": _fn("book_restaurant", "Reserve a table.",
                           {"restaurant": S, "city": S, "time": S, "party_size": I, "preferences": {"type": "object"}},
                           ["restaurant", "time", "party_size"]),
    "plan_route": _fn("plan_route", "Plan a route between places.",
                      {"waypoints": {"type": "array", "items": S}, "mode": S, "avoid": {"type": "array", "items": S}},
                      ["waypoints"]),
    "create_issue": _fn("create_issue", "Open an issue in a code repository.",
                        {"repo": S, "title": S, "body": S, "labels": {"type": "array", "items": S}}, ["repo", "title"]),
    "set_reminder": _fn("set_reminder", "Set a reminder.", {"text": S, "at": S, "repeat": S}, ["text", "at"]),
    "lookup_product": _fn("lookup_product", "Look a product up in the store catalogue.",
                          {"query": S, "filters": {"type": "object"}, "sort": S}, ["query"]),
    "update_profile": _fn("update_profile", "Update fields of a user profile.",
                          {"user_id": S, "changes": {"type": "object"}, "notify": B}, ["user_id", "changes"]),
}

CITIES = ["München", "São Paulo", "Zürich", "東京", "Kraków", "Reykjavík", "İstanbul", "Paris", "Lisboa",
          "Montréal", "Qingdao", "Málaga", "Göteborg", "Ho Chi Minh City", "Αθήνα", "Москва", "Seoul", "Nairobi",
          "Cluj-Napoca", "北京", "Düsseldorf", "Córdoba"]
NAMES = ["Zoë Martín", "Jürgen Weiß", "Ana Lúcia", "李雷", "Øyvind Berg", "Siobhán O'Neill", "Renée Dubois",
         "Mateusz Łukasik", "Priya Natarajan", "Tomás Ibáñez", "佐藤 花子", "Emeka Obi"]
EMAILS = ["zoe@example.org", "juergen.weiss@example.de", "ana@example.com.br", "li.lei@example.cn",
          "oyvind@example.no", "siobhan@example.ie"]
CURRENCIES = [("EUR", "JPY"), ("USD", "BRL"), ("GBP", "CHF"), ("CNY", "EUR"), ("PLN", "USD"), ("ISK", "EUR"),
              ("KRW", "USD"), ("TRY", "GBP")]
SYMBOLS = [("AAPL", "NASDAQ"), ("SAP", "XETRA"), ("7203", "TSE"), ("VALE3", "B3"), ("NESN", "SIX"), ("0700", "HKEX")]
DATES = ["2026-12-03", "2026-12-18", "2027-01-07", "2027-02-14", "2027-03-30", "2026-12-24"]
TIMES = ["2026-12-03T19:30:00+01:00", "2026-12-18T12:00", "2027-01-07 08:15", "2027-02-14T20:00:00Z", "tomorrow 9am"]
LANGS = [("en", "de"), ("fr", "ja"), ("es", "zh"), ("de", "pt"), ("ko", "en"), ("it", "ru")]
PHRASES = ["Where is the nearest pharmacy?", "Das Meeting ist auf Donnerstag verschoben.", "¿Puedes enviarme la factura?",
           "本日はありがとうございました。", "Le train part à 7 h 42.", "회의는 오후 3시에 시작합니다."]
PRODUCTS = ["noise-cancelling headphones", "espresso machine", "trail running shoes", "4K monitor", "kids' raincoat",
            "cast-iron pan", "mechanical keyboard (ISO layout)"]
REPOS = ["acme/tokfidelity", "octo-org/widget", "kimi-tools/parser", "data-team/etl-jobs"]


def _pick(rng, seq):
    return seq[rng.randrange(len(seq))]


# ------------------------------------------------------------------------------------------
# Scenarios: each returns (user text, [(tool name, arguments dict)], reasoning hint, content)
# ------------------------------------------------------------------------------------------
def sc_weather(rng):
    cities = rng.sample(CITIES, rng.choice([1, 1, 2, 3]))
    units = rng.choice(["metric", "imperial"])
    days = rng.choice([None, 3, 5])
    user = ("What's the weather like in " + " and ".join(cities) + (f" for the next {days} days" if days else "") + "?")
    calls = []
    for c in cities:
        args = {"city": c, "units": units}
        if days:
            args["days"] = days
        calls.append(("get_weather", args))
    why = f"The user wants the weather for {len(cities)} place(s); one get_weather call per city, {units} units."
    return user, calls, why


def sc_flights(rng):
    o, d = rng.sample(CITIES, 2)
    date = _pick(rng, DATES)
    args = {"origin": o, "destination": d, "date": date,
            "passengers": {"adults": rng.randint(1, 3), "children": rng.choice([0, 1, 2])}}
    if rng.random() < 0.6:
        args["filters"] = {"max_stops": rng.choice([0, 1]), "cabin": rng.choice(["economy", "premium_economy", "business"]),
                           "price": {"currency": "EUR", "max": rng.choice([250, 480.5, 1200])}}
    if rng.random() < 0.4:
        args["return_date"] = _pick(rng, DATES)
    user = f"Find me flights from {o} to {d} on {date}. {args['passengers']['adults']} adults, {args['passengers']['children']} kids."
    return user, [("search_flights", args)], "A flight search with nested passenger counts and filters."


def sc_currency(rng):
    pairs = rng.sample(CURRENCIES, rng.choice([1, 2]))
    amount = rng.choice([12.5, 100, 2500, 0.99, 1_000_000, 73.2])
    user = "Convert " + " and ".join(f"{amount} {a} to {b}" for a, b in pairs) + ", please."
    return user, [("convert_currency", {"amount": amount, "from": a, "to": b}) for a, b in pairs], \
        "Currency conversion; amounts stay numbers, codes are ISO 4217."


def sc_event(rng):
    who = rng.sample(NAMES, rng.randint(1, 3))
    title = rng.choice(["Quarterly review", "Kick-off: Projekt Möwe", "Dentist 🦷", "Team lunch 🍜", "1:1 with " + who[0],
                        "Release planning — v2.3"])
    args = {"title": title, "start": _pick(rng, TIMES), "attendees": who}
    if rng.random() < 0.5:
        args["location"] = rng.choice(["Raum 4.12", "Café Fleur, Rue de l'Église 3", "Zoom", "会議室B"])
    if rng.random() < 0.5:
        args["reminder"] = {"minutes_before": rng.choice([5, 15, 60]), "channels": ["push", "email"]}
    user = f"Put '{title}' in my calendar with {', '.join(who)}."
    return user, [("create_event", args)], "Calendar event; attendee names keep their accents."


def sc_email(rng):
    to = rng.sample(EMAILS, rng.randint(1, 2))
    subject = rng.choice(["Re: Angebot Nr. 2026-114", "Minutes — 3 Dec", "Facture n° 4471", "Quick question 🙂",
                          "Travel plan: 東京 → 北京"])
    body = rng.choice([
        "Hi,\n\nplease find the numbers below.\n\n- Q3: 1.2M\n- Q4: 1.45M\n\nBest,\nZoë",
        "Bonjour,\n\nMerci pour votre retour. Ci-joint la facture corrigée.\n\nCordialement",
        "Hallo Jürgen,\n\nkönnen wir das auf nächste Woche schieben?\n\nGrüße",
        "Thanks! See you at 9:30 — room \"Aurora\".",
    ])
    args = {"to": to, "subject": subject, "body": body}
    if rng.random() < 0.3:
        args["cc"] = [_pick(rng, EMAILS)]
    return f"Email {', '.join(to)} about '{subject}'.", [("send_email", args)], \
        "An email; the body keeps its newlines and quotes, so they are escaped inside the JSON string."


def sc_sql(rng):
    sql = rng.choice([
        "SELECT country, COUNT(*) AS n FROM orders WHERE created_at >= ? GROUP BY country ORDER BY n DESC",
        "SELECT name, price FROM products WHERE name ILIKE ? AND price < ?",
        "SELECT user_id, SUM(amount) FROM payments\nWHERE status = 'settled'\nGROUP BY user_id\nHAVING SUM(amount) > ?",
        "WITH t AS (SELECT * FROM events WHERE kind = ?) SELECT date_trunc('day', ts) d, count(*) FROM t GROUP BY d",
    ])
    params = [p for p in rng.choice([["2026-11-01"], ["%café%", 20], [1000], ["signup"]])]
    args = {"sql": sql, "params": params, "limit": rng.choice([10, 50, 100])}
    return "How many orders per country since November? Or whatever the query needs, run it.", [("query_database", args)], \
        "A read-only SQL query with bound parameters, not string formatting."


def sc_translate(rng):
    (src, dst), text = _pick(rng, LANGS), _pick(rng, PHRASES)
    return f"Translate this into {dst}: {text}", [("translate_text", {"text": text, "source_lang": src, "target_lang": dst})], \
        "Translation; the text goes through unchanged, in its own script."


def sc_stock(rng):
    picks = rng.sample(SYMBOLS, rng.choice([1, 2, 3]))
    return "Prices for " + ", ".join(s for s, _ in picks) + "?", \
        [("get_stock_price", {"symbol": s, "exchange": e}) for s, e in picks], \
        "Several independent lookups: call them all at once."


def sc_restaurant(rng):
    city = _pick(rng, CITIES)
    args = {"restaurant": rng.choice(["Le Petit Zinc", "Sushi Saitō", "Trattoria da Mario", "Café Sacher", "Bäckerei Müller"]),
            "city": city, "time": _pick(rng, TIMES), "party_size": rng.randint(2, 8)}
    if rng.random() < 0.6:
        args["preferences"] = {"seating": rng.choice(["terrace", "window", "quiet corner"]),
                               "diet": rng.sample(["vegetarian", "gluten-free", "halal", "nut allergy"], 2),
                               "occasion": rng.choice([None, "birthday 🎂", "anniversary"])}
    return f"Book {args['restaurant']} in {city} for {args['party_size']}.", [("book_restaurant", args)], \
        "Restaurant booking; preferences are a nested object, null where not given."


def sc_route(rng):
    pts = rng.sample(CITIES, rng.randint(2, 4))
    args = {"waypoints": pts, "mode": rng.choice(["driving", "train", "cycling"]), "avoid": rng.sample(["tolls", "ferries", "highways"], rng.randint(0, 2))}
    return "Plan a trip " + " → ".join(pts) + ".", [("plan_route", args)], "A route with waypoints in order."


def sc_issue(rng):
    repo = _pick(rng, REPOS)
    title = rng.choice(["Tokenizer drops digit pre-split for GGUF", "Crash on empty tool_calls list",
                        "`</think>` stripped by legacy parser", "Docs: typo in README (\"recieve\")"])
    body = rng.choice(["Steps:\n1. run `tokfidelity audit`\n2. see `163533 chas`\n\nExpected: 163586.",
                       "Seen with `finish_reason: length` — the last emoji is cut: `\\ud83d`.",
                       "Repro attached.\n\n```json\n{\"content\": \"\", \"tool_calls\": []}\n```"])
    args = {"repo": repo, "title": title, "body": body, "labels": rng.sample(["bug", "docs", "tokenizer", "good first issue"], 2)}
    return f"Open an issue in {repo}: {title}", [("create_issue", args)], \
        "An issue whose body has backticks, a code fence and escaped quotes."


def sc_reminder(rng):
    args = {"text": rng.choice(["Call Oma 📞", "Pay rent", "Renew passport — Bürgeramt", "薬を飲む"]),
            "at": _pick(rng, TIMES), "repeat": rng.choice(["none", "weekly", "monthly"])}
    return f"Remind me to {args['text']}.", [("set_reminder", args)], "A reminder."


def sc_product(rng):
    q = _pick(rng, PRODUCTS)
    args = {"query": q, "filters": {"price": {"min": 0, "max": rng.choice([99, 149.99, 400])},
                                    "in_stock": True, "brands": rng.sample(["Sony", "Bose", "Sennheiser", "De'Longhi", "Salomon"], 2)},
            "sort": rng.choice(["price_asc", "rating", "relevance"])}
    return f"Find a {q} under {args['filters']['price']['max']} €.", [("lookup_product", args)], \
        "Product search with a nested filter object."


def sc_profile(rng):
    args = {"user_id": f"u_{rng.randint(1000, 99999)}",
            "changes": {"display_name": _pick(rng, NAMES), "address": {"city": _pick(rng, CITIES), "zip": rng.choice(["80331", "01310-100", "8001"])},
                        "languages": rng.sample(["de", "en", "pt-BR", "ja", "zh-Hans"], 2)},
            "notify": rng.random() < 0.5}
    return f"Update my profile: name {args['changes']['display_name']}, I moved to {args['changes']['address']['city']}.", \
        [("update_profile", args)], "A partial update: only the changed fields, nested as the schema says."


def sc_mixed(rng):
    city = _pick(rng, CITIES)
    a = ("get_weather", {"city": city, "units": "metric"})
    b = ("book_restaurant", {"restaurant": "Osteria Nonna", "city": city, "time": _pick(rng, TIMES), "party_size": 2,
                             "preferences": {"seating": "terrace" if rng.random() < 0.5 else "inside"}})
    c = ("set_reminder", {"text": f"Dinner in {city}", "at": _pick(rng, TIMES), "repeat": "none"})
    return f"If it's warm in {city} tomorrow, book a terrace table for two and remind me.", [a, b, c][: rng.randint(2, 3)], \
        "Independent calls can go out together; the terrace choice waits on the weather, so ask for both now."


SCENARIOS = [sc_weather, sc_flights, sc_currency, sc_event, sc_email, sc_sql, sc_translate, sc_stock,
             sc_restaurant, sc_route, sc_issue, sc_reminder, sc_product, sc_profile, sc_mixed]

REASONING_OPENERS = [
    "The user is asking for something a tool can do. ",
    "Let me figure out which function fits. ",
    "OK. ",
    "",
    "This needs live data, so I shouldn't guess. ",
    "用户需要调用工具。 ",
    "Right, I have the tools for this. ",
]
REASONING_CLOSERS = [
    " I'll call it now.",
    " No need to ask for clarification; all required fields are there.",
    " Required fields: check. Optional ones only where the user said so.",
    "",
    " Arguments must be valid JSON.",
    "\n\nLet me make the call(s).",
]
CONTENTS = [
    "", "", "", "",
    "Let me check that for you.",
    "Sure — one moment.",
    "I'll look that up.",
    "On it! 🔍",
    "Einen Moment, ich schaue nach.",
    "Je m'en occupe.",
    "\n\nChecking now.",
    "好的，我来查一下。",
]


def write_args(rng, args: dict) -> str:
    """Arguments JSON written in one of the styles models use."""
    style = rng.choice(["compact", "compact", "spaced", "spaced", "indent2", "odd", "ascii", "indent_tabs"])
    if style == "compact":
        return json.dumps(args, ensure_ascii=False, separators=(",", ":"))
    if style == "spaced":
        return json.dumps(args, ensure_ascii=False)
    if style == "indent2":
        return json.dumps(args, ensure_ascii=False, indent=2)
    if style == "indent_tabs":
        return json.dumps(args, ensure_ascii=False, indent="\t")
    if style == "ascii":  # the model itself escaped non-ASCII
        return json.dumps(args, ensure_ascii=True)
    # unusual spacing: space inside braces, before colons, double spaces after commas
    text = json.dumps(args, ensure_ascii=False, separators=(" ,  ", " : "))
    return "{ " + text[1:-1] + " }"


def build(kimi: KimiIds, seed: int = 20261129, count: int = 112) -> list[dict]:
    rng = random.Random(seed)
    samples = []
    for n in range(count):
        scenario = SCENARIOS[n % len(SCENARIOS)]
        user, planned, why = scenario(rng)
        names = sorted({name for name, _ in planned})
        extra = rng.sample(sorted(TOOLS), rng.randint(0, 2))
        tools = [TOOLS[t] for t in dict.fromkeys(names + extra)]
        messages = [{"role": "user", "content": user}]
        if rng.random() < 0.3:
            messages.insert(0, {"role": "system", "content": rng.choice([
                "You are a travel assistant. Use the tools; never invent prices.",
                "You are Kimi, an AI assistant created by Moonshot AI.",
                "Antworte auf Deutsch. Nutze die Werkzeuge, wenn nötig."])})
        counter = 0
        # a third of the conversations already had a tool round: the call counter goes on
        if rng.random() < 0.33:
            prior_name, prior_args = planned[0]
            prior_id = f"functions.{prior_name}:0"
            messages += [
                {"role": "assistant", "content": "", "tool_calls": [{"id": prior_id, "type": "function", "function": {
                    "name": prior_name, "arguments": json.dumps(prior_args, ensure_ascii=False)}}]},
                {"role": "tool", "tool_call_id": prior_id, "content": json.dumps({"ok": True, "note": "partial result"})},
                {"role": "user", "content": "Thanks. Now do the rest too, with the same settings."},
            ]
            counter = 1
            if len(planned) > 1:  # the first call already went out in the earlier round
                planned = planned[1:]
        calls = [Call(name, write_args(rng, args), f"functions.{name}:{counter + i}") for i, (name, args) in enumerate(planned)]
        reasoning = _pick(rng, REASONING_OPENERS) + why + _pick(rng, REASONING_CLOSERS)
        turn = Turn(reasoning=reasoning, content=_pick(rng, CONTENTS), calls=calls)
        samples.append({"id": f"b1-{n:04d}", "messages": messages, "tools": tools, "turn": turn, "counter": counter})

    # final answers after a tool result: no calls, the content summarises
    for n in range(count, count + 8):
        city = _pick(rng, CITIES)
        call_id = "functions.get_weather:0"
        messages = [
            {"role": "user", "content": f"Weather in {city}?"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": call_id, "type": "function",
                                                              "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}]},
            {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"temp_c": rng.randint(-8, 31), "sky": rng.choice(["clear", "rain", "snow", "fog"])})},
        ]
        content = rng.choice([
            f"It's currently {{t}}°C in {city} with {{s}} skies. 🌤️",
            f"In {city}: {{t}} °C, {{s}}.\n\n- Bring a jacket if you go out tonight.\n- Wind: light.",
            f"Aktuell {{t}} °C in {city}, {{s}}.",
        ])
        tool_result = json.loads(messages[-1]["content"])
        content = content.format(t=tool_result["temp_c"], s=tool_result["sky"])
        turn = Turn(reasoning="The tool answered; summarise it briefly with the numbers as given.", content=content)
        samples.append({"id": f"b1-{n:04d}", "messages": messages, "tools": [TOOLS["get_weather"]], "turn": turn, "counter": 1})
    return samples
