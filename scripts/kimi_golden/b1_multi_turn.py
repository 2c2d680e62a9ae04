"""B1_glaive, multi-turn part: Kimi K2.5 conversations with tool results, written for this project.

Each conversation is composed deterministically (its own seed, so B1's first 120 samples stay as they
were) from the hand-written chains below: a user request, one to three tool rounds (an assistant turn
with one or several parallel calls, then one tool message per call: JSON compact or indented, plain
multi-line text, non-ASCII, error messages), then the turn the sample holds as output ids: the final
answer, or the calls of a further round (the call counter going on across the conversation). Some
conversations begin with an earlier, finished exchange (a plain answer), whose reasoning Kimi K2.5's
template drops from later prompts; the reasoning of the tool-call turns after the last plain answer it
keeps. Reasoning is present in some history turns and absent in others.
"""

from __future__ import annotations

import json
import random

from .b1_glaive import CITIES, EMAILS, NAMES, SYMBOLS, TOOLS, _pick, write_args
from .kimi_turn import Call, Turn

SEED = 20261201


class Conversation:
    """The messages of one conversation as an OpenAI-compatible client sends them back, turn by turn."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.messages: list[dict] = []
        self.counter = 0  # Kimi's tool-call ids count across the whole conversation
        self.names: list[str] = []

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def calls(self, planned: list[tuple[str, dict]]) -> list[Call]:
        out = [Call(name, write_args(self.rng, args), f"functions.{name}:{self.counter + i}") for i, (name, args) in enumerate(planned)]
        self.counter += len(out)
        self.names += [name for name, _ in planned]
        return out

    def call_turn(self, reasoning: str, content: str, planned: list[tuple[str, dict]], results: list[str]) -> None:
        """An assistant turn with tool calls, then one tool message per call."""
        written = self.calls(planned)
        message = {"role": "assistant", "content": content}
        if reasoning:
            message["reasoning_content"] = reasoning
        message["tool_calls"] = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                                 for c in written]
        self.messages.append(message)
        named = self.rng.random() < 0.25  # some clients name the tool on its result (the template's role name then)
        for call, result in zip(written, results, strict=True):
            tool = {"role": "tool", "tool_call_id": call.id, "content": result}
            if named:
                tool["name"] = call.name
            self.messages.append(tool)

    def answer_turn(self, reasoning: str, content: str) -> None:
        message = {"role": "assistant", "content": content}
        if reasoning:
            message["reasoning_content"] = reasoning
        self.messages.append(message)


def maybe(rng: random.Random, text: str, p: float = 0.65) -> str:
    """Reasoning present in some turns, absent (an empty think block) in others."""
    return text if rng.random() < p else ""


def as_json(rng: random.Random, value) -> str:
    style = rng.choice(["compact", "spaced", "indent2", "indent2"])
    if style == "compact":
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if style == "spaced":
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False, indent=2)


# ------------------------------------------------------------------------------------------
# Chains: each fills a Conversation and returns its rounds, as (reasoning, content, calls, results), and
# the final answer as (reasoning, content). The sample's output is the answer, or the last round's calls.
# ------------------------------------------------------------------------------------------
def ch_weather_dinner(rng, conv):
    city = _pick(rng, CITIES)
    n = rng.randint(2, 6)
    conv.user(f"If it's dry in {city} tonight, book a terrace table for {n} at Osteria Nonna; otherwise a table inside.")
    sky = rng.choice(["clear", "light rain", "drizzle", "clear"])
    temp = rng.randint(-3, 24)
    if rng.random() < 0.5:
        weather = as_json(rng, {"city": city, "temp_c": temp, "sky": sky, "wind_kmh": rng.randint(3, 40)})
    else:
        weather = f"{city}: {temp} °C, {sky}\nWind: {rng.randint(3, 40)} km/h\nTonight: {temp - 3} °C"
    seating = "terrace" if sky == "clear" and temp > 12 else "inside"
    conf = f"R-{rng.randint(1000, 9999)}"
    note = rng.choice(["Bitte 10 Minuten vorher da sein.", "Merci de prévenir en cas de retard.", "Tavolo vicino alla finestra."])
    booking = as_json(rng, {"confirmation": conf, "table": seating, "time": "19:30", "note": note})
    rounds = [
        (maybe(rng, "Whether it's dry decides the seating; check the weather first."), "",
         [("get_weather", {"city": city, "units": "metric"})], [weather]),
        (maybe(rng, f"It is {sky} and {temp} °C, so {seating}. Book now."), rng.choice(["", f"It's {sky} — booking a table {seating}."]),
         [("book_restaurant", {"restaurant": "Osteria Nonna", "city": city, "time": "19:30", "party_size": n,
                               "preferences": {"seating": seating}})], [booking]),
    ]
    where = "on the terrace" if seating == "terrace" else "inside"
    answer = (f"It's {sky} in {city} ({temp} °C), so I booked a table {where} at Osteria Nonna for {n} at 19:30. "
              f"Confirmation: **{conf}**.\n\nNote from the restaurant: „{note}“")
    return rounds, ("The booking is confirmed; give the number and the restaurant's note.", answer)


def ch_trip(rng, conv):
    o, d = rng.sample(CITIES, 2)
    date = rng.choice(["2026-12-03", "2026-12-18", "2027-01-07"])
    conv.user(f"Find the cheapest direct flight {o} → {d} on {date}, put it in my calendar and remind me the evening before.")
    flights = [{"flight": f"{rng.choice(['LH', 'AF', 'TK', 'LX'])} {rng.randint(100, 2999)}", "dep": dep, "arr": arr,
                "stops": 0, "price": {"EUR": price}}
               for dep, arr, price in [("07:05", "09:10", rng.choice([212.4, 189.0])), ("13:40", "15:55", 164.99),
                                       ("19:20", "21:30", rng.choice([301.5, 120.0]))]]
    cheapest = min(flights, key=lambda f: f["price"]["EUR"])
    found = as_json(rng, {"results": flights, "currency": "EUR", "note": f"{len(flights)} Direktflüge gefunden"})
    title = f"Flight {cheapest['flight']} {o} → {d}"
    rounds = [
        (maybe(rng, "Direct flights only: max_stops 0. Then pick the cheapest."), "",
         [("search_flights", {"origin": o, "destination": d, "date": date, "filters": {"max_stops": 0}})], [found]),
        (maybe(rng, f"Cheapest is {cheapest['flight']} at {cheapest['price']['EUR']} EUR. Event and reminder are independent: both at once."),
         "",
         [("create_event", {"title": title, "start": f"{date}T{cheapest['dep']}", "end": f"{date}T{cheapest['arr']}"}),
          ("set_reminder", {"text": f"Pack for {d} ✈️", "at": "the evening before, 20:00", "repeat": "none"})],
         [as_json(rng, {"id": f"evt_{rng.randint(10**5, 10**6 - 1)}", "status": "confirmed", "title": title}),
          as_json(rng, {"ok": True, "id": f"rem_{rng.randint(100, 999)}"})]),
    ]
    answer = (f"Booked into your calendar: **{title}**, {date}, {cheapest['dep']}–{cheapest['arr']} "
              f"({cheapest['price']['EUR']} €, direct). I'll remind you the evening before at 20:00.")
    return rounds, (maybe(rng, "Both calls succeeded; confirm briefly."), answer)


def ch_portfolio(rng, conv):
    picks = rng.sample(SYMBOLS, rng.randint(2, 3))
    currency = {"NASDAQ": "USD", "XETRA": "EUR", "TSE": "JPY", "B3": "BRL", "SIX": "CHF", "HKEX": "HKD"}
    conv.user("What are " + ", ".join(s for s, _ in picks) + " trading at, in euros?")
    quotes = [{"symbol": s, "price": round(rng.uniform(10, 3000), 2), "currency": currency[e], "as_of": "2026-12-01T09:00:00Z"}
              for s, e in picks]
    foreign = [q for q in quotes if q["currency"] != "EUR"]
    rates = {q["symbol"]: round(rng.uniform(0.005, 1.2), 4) for q in foreign}
    rounds = [
        (maybe(rng, "Independent lookups: all prices at once."), "",
         [("get_stock_price", {"symbol": s, "exchange": e}) for s, e in picks], [as_json(rng, q) for q in quotes]),
    ]
    if foreign:
        rounds.append((maybe(rng, "Convert the non-euro prices, all in one round."), "",
                       [("convert_currency", {"amount": q["price"], "from": q["currency"], "to": "EUR"}) for q in foreign],
                       [as_json(rng, {"result": round(q["price"] * rates[q["symbol"]], 2), "rate": rates[q["symbol"]]}) for q in foreign]))
    rows = [f"| {q['symbol']} | {q['price']} {q['currency']} | "
            f"{round(q['price'] * rates[q['symbol']], 2) if q['symbol'] in rates else q['price']} € |" for q in quotes]
    answer = "| Symbol | Price | In EUR |\n|---|---|---|\n" + "\n".join(rows) + "\n\nPrices as of 09:00 UTC."
    return rounds, (maybe(rng, "Table with the original and the euro price."), answer)


SQL_ERROR = ('ERROR:  column "created" does not exist\nLINE 1: SELECT country, count(*) FROM orders WHERE created >= $1 GROUP BY 1\n'
             '                                                      ^\nHINT:  Perhaps you meant to reference the column "orders.created_at".')


def ch_sql_retry(rng, conv):
    conv.user("How many orders per country since 1 November? Mail the numbers to " + _pick(rng, EMAILS) + ".")
    to = conv.messages[-1]["content"].rsplit(" ", 1)[1].rstrip(".")
    counts = [("DE", rng.randint(900, 1500)), ("BR", rng.randint(400, 899)), ("JP", rng.randint(100, 399)), ("Ísland", rng.randint(1, 40))]
    table = " country | n\n---------+------\n" + "\n".join(f" {c:<7} | {n:>4}" for c, n in counts) + f"\n({len(counts)} rows)"
    body = "Orders per country since 2026-11-01:\n\n" + "\n".join(f"- {c}: {n}" for c, n in counts)
    rounds = [
        (maybe(rng, "Count per country with a bound date parameter."), "",
         [("query_database", {"sql": "SELECT country, count(*) FROM orders WHERE created >= $1 GROUP BY 1", "params": ["2026-11-01"]})],
         [SQL_ERROR]),
        (maybe(rng, "The column is created_at, as the hint says. Retry."), "The column name was wrong; retrying.",
         [("query_database", {"sql": "SELECT country, count(*) AS n FROM orders WHERE created_at >= $1 GROUP BY 1 ORDER BY n DESC",
                              "params": ["2026-11-01"]})], [table]),
        (maybe(rng, "Now mail the numbers."), "",
         [("send_email", {"to": [to], "subject": "Orders per country (since 1 Nov)", "body": body})],
         [f"Message queued: <{rng.randint(10**7, 10**8 - 1)}@mail.example.org>\nRecipients: {to}"]),
    ]
    answer = f"Done. I sent {to} the counts ({', '.join(f'{c} {n}' for c, n in counts)}). The first query used a wrong column name; the retry worked."
    return rounds, (maybe(rng, "All done; summarise in one line."), answer)


def ch_translate_mail(rng, conv):
    name = _pick(rng, NAMES)
    text, lang, out = rng.choice([("The meeting moves to Thursday, 10:00.", "ja", "会議は木曜日の10時に変更になります。"),
                                  ("The invoice is attached.", "zh", "发票已附上。"),
                                  ("See you on Friday!", "de", "Bis Freitag!")])
    to = _pick(rng, EMAILS)
    conv.user(f"Translate \"{text}\" into {lang} and email it to {name} ({to}).")
    rounds = [
        (maybe(rng, "Translate first; the mail needs the translation."), "",
         [("translate_text", {"text": text, "source_lang": "en", "target_lang": lang})],
         [as_json(rng, {"translation": out, "detected_source": "en", "confidence": 0.98})]),
        (maybe(rng, "Send it as the body, with the English below."), "",
         [("send_email", {"to": [to], "subject": "Kurze Nachricht / short note", "body": f"{out}\n\n({text})"})],
         [f"250 OK — queued as {rng.randint(10**5, 10**6 - 1)}"]),
    ]
    return rounds, (maybe(rng, "Confirm with the translation."), f"Sent to {name}:\n\n> {out}\n\n(English below it.)")


def ch_route_weather(rng, conv):
    pts = rng.sample(CITIES, rng.randint(2, 3))
    conv.user("Plan a train trip " + " → ".join(pts) + " and tell me the weather at each stop.")
    legs = "\n".join(f"{i + 1}. {a} → {b}: {rng.randint(2, 9)} h {rng.randint(0, 59):02d} min" for i, (a, b) in enumerate(zip(pts, pts[1:])))
    temps = {p: rng.randint(-5, 28) for p in pts}
    rounds = [
        (maybe(rng, "Route first, then the weather per stop in parallel."), rng.choice(["", "Planning the route."]),
         [("plan_route", {"waypoints": pts, "mode": "train"})], [f"Route (train), {len(pts) - 1} leg(s):\n{legs}\nTotal CO₂: 12 kg"]),
        (maybe(rng, "One get_weather call per stop."), "",
         [("get_weather", {"city": p, "units": "metric"}) for p in pts],
         [as_json(rng, {"city": p, "temp_c": temps[p], "sky": rng.choice(["clear", "cloudy", "snow"])}) for p in pts]),
    ]
    answer = "Your route:\n\n" + legs + "\n\nWeather: " + ", ".join(f"{p} {t} °C" for p, t in temps.items()) + "."
    return rounds, (maybe(rng, "Route and weather together."), answer)


def ch_product(rng, conv):
    q = rng.choice(["noise-cancelling headphones", "espresso machine", "trail running shoes"])
    conv.user(f"Which {q} under 400 € are in stock?")
    items = [{"name": n, "price": p, "in_stock": True, "rating": r}
             for n, p, r in rng.sample([("Sony WH-1000XM6", 379.0, 4.7), ("Bose QC Ultra", 349.95, 4.6), ("De'Longhi Dedica", 199.0, 4.3),
                                        ("Salomon Speedcross 6", 139.9, 4.5), ("Sennheiser Momentum 4", 299.0, 4.4)], 3)]
    rounds = [(maybe(rng, "A catalogue search with a price filter."), "",
               [("lookup_product", {"query": q, "filters": {"price": {"max": 400}, "in_stock": True}, "sort": "rating"})],
               [as_json(rng, {"items": items, "total": len(items)})])]
    answer = "In stock under 400 €:\n\n" + "\n".join(f"- {i['name']}: {i['price']} € (★ {i['rating']})" for i in items)
    return rounds, (maybe(rng, "List them by rating."), answer)


def ch_profile_error(rng, conv):
    uid = f"u_{rng.randint(1000, 99999)}"
    city = _pick(rng, CITIES)
    conv.user(f"Update profile {uid}: I moved to {city}.")
    rounds = [(maybe(rng, "A partial update of the address."), "",
               [("update_profile", {"user_id": uid, "changes": {"address": {"city": city}}})],
               [as_json(rng, {"error": {"code": "not_found", "message": f"Benutzer {uid} nicht gefunden / ユーザーが見つかりません"}})])]
    answer = f"I couldn't update the profile: no user **{uid}** exists. Could you check the id? It usually starts with `u_` and is on the account page."
    return rounds, (maybe(rng, "The tool says not found; ask for the id, don't guess."), answer)


def ch_issue_notify(rng, conv):
    repo = rng.choice(["acme/tokfidelity", "kimi-tools/parser"])
    to = _pick(rng, EMAILS)
    conv.user(f"Open a bug in {repo}: the streaming parser loses the end of the reasoning. Then tell {to}.")
    number = rng.randint(100, 999)
    rounds = [
        (maybe(rng, "Issue first: the mail needs its link."), "",
         [("create_issue", {"repo": repo, "title": "Streaming parser: reasoning ends up in the content",
                            "body": "Steps:\n1. stream a Kimi K2.5 reply\n2. the reasoning ends in the content\n\nExpected: split at the end-of-thinking marker.",
                            "labels": ["bug"]})],
         [as_json(rng, {"number": number, "url": f"https://github.com/{repo}/issues/{number}", "state": "open"})]),
        (maybe(rng, "Now the mail, with the link."), "",
         [("send_email", {"to": [to], "subject": f"New bug #{number}", "body": f"Filed: https://github.com/{repo}/issues/{number}"})],
         ["Message queued.\nWarnung: Empfänger hat eine Abwesenheitsnotiz aktiviert."]),
    ]
    return rounds, (maybe(rng, "Done; mention the out-of-office note."),
                    f"Filed as #{number} and sent {to} the link. Heads-up: they have an out-of-office reply on.")


CHAINS = [ch_weather_dinner, ch_trip, ch_portfolio, ch_sql_retry, ch_translate_mail, ch_route_weather, ch_product,
          ch_profile_error, ch_issue_notify]

SYSTEMS = ["You are a travel assistant. Use the tools; never invent prices.", "You are Kimi, an AI assistant created by Moonshot AI.",
           "Antworte knapp. Nutze die Werkzeuge, wenn nötig."]


def earlier_exchange(rng, conv):
    """A finished exchange before the request: its turns are history, their reasoning dropped from later prompts."""
    if rng.random() < 0.5:
        conv.user("Hi! Can you help me with a few errands today?")
        conv.answer_turn(maybe(rng, "A greeting; offer help, keep it short.", 0.8), "Of course — what do you need?")
        return
    city = _pick(rng, CITIES)
    conv.user(f"Quick one first: is it cold in {city}?")
    conv.call_turn(maybe(rng, "Needs live weather.", 0.8), "",
                   [("get_weather", {"city": city})], [as_json(rng, {"temp_c": rng.randint(-10, 5), "sky": "clear"})])
    temp = json.loads(conv.messages[-1]["content"])["temp_c"]
    conv.answer_turn(maybe(rng, "It's below or near freezing: say so.", 0.8), f"Yes, {temp} °C in {city} right now. 🧣")


def build(kimi, start: int, count: int = 24, seed: int = SEED) -> list[dict]:
    """``count`` multi-turn samples with tool results, ids b1-{start:04d} on."""
    rng = random.Random(seed)
    samples = []
    for n in range(count):
        conv = Conversation(rng)
        if rng.random() < 0.3:
            conv.messages.append({"role": "system", "content": _pick(rng, SYSTEMS)})
        if rng.random() < 0.4:
            earlier_exchange(rng, conv)
        rounds, (answer_reasoning, answer) = CHAINS[n % len(CHAINS)](rng, conv)
        # some conversations with several rounds stop before their last round: the output is its calls
        if len(rounds) > 1 and rng.random() < 0.4:
            *rounds, (reasoning, content, planned, _) = rounds
            output = None
        else:
            output = Turn(reasoning=answer_reasoning or "Summarise the tool results.", content=answer)
        for reasoning, content, calls, results in rounds:
            conv.call_turn(reasoning, content, calls, results)
        if output is None:
            output = Turn(reasoning=reasoning or "Next round of calls.", content=content, calls=conv.calls(planned))
        used = list(dict.fromkeys(sorted(set(conv.names))))
        extra = [t for t in rng.sample(sorted(TOOLS), 2) if t not in used][: rng.randint(0, 1)]
        tools = [TOOLS[t] for t in used + extra]
        # the calls of the output turn count in its counter (only the earlier ones)
        earlier = sum(len(m.get("tool_calls") or []) for m in conv.messages)
        samples.append({"id": f"b1-{start + n:04d}", "messages": conv.messages, "tools": tools, "turn": output, "counter": earlier})
    return samples
