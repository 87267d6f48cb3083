"""The demo's data: form templates (title, status, blocks) and the names,
companies and sentences answers are drawn from."""

from typing import Any


def _opts(*labels: str) -> list[dict[str, str]]:
    return [
        {"value": label.lower().replace(" ", "_").replace("/", "_"), "label": label}
        for label in labels
    ]


def _q(kind: str, key: str, title: str, required: bool = False, **settings: Any) -> dict[str, Any]:
    return {"type": kind, "key": key, "title": title, "required": required, **settings}


TEMPLATES: list[tuple[str, str, list[dict[str, Any]]]] = [
    (
        "Customer satisfaction survey",
        "published",
        [
            {"type": "heading", "text": "How did we do?"},
            _q("rating", "overall", "Overall, how satisfied are you with us?", True, scale=5),
            _q(
                "rating",
                "recommend",
                "How likely are you to recommend us to a friend?",
                True,
                scale=10,
            ),
            _q(
                "single_choice",
                "channel",
                "How did you first hear about us?",
                True,
                options=_opts(
                    "Search engine", "Friend or colleague", "Social media", "Podcast", "Conference"
                ),
            ),
            _q(
                "multiple_choice",
                "liked",
                "What did you like?",
                False,
                options=_opts("Price", "Quality", "Support", "Delivery speed", "Ease of use"),
                maxSelections=3,
            ),
            _q(
                "long_text",
                "comments",
                "Anything else you would like to tell us?",
                False,
                maxLength=2000,
            ),
            _q("email", "email", "Your email, if we may follow up", False),
        ],
    ),
    (
        "Event registration: DevDays 2026",
        "closed",
        [
            {"type": "paragraph", "text": "Two days of talks and workshops. Seats are limited."},
            _q("short_text", "full_name", "Full name", True, maxLength=120),
            _q("email", "email", "Email", True),
            _q("short_text", "company", "Company", False, maxLength=120),
            _q(
                "single_choice",
                "ticket",
                "Ticket",
                True,
                options=_opts("Day 1", "Day 2", "Both days"),
            ),
            _q(
                "multiple_choice",
                "workshops",
                "Workshops you want to join",
                False,
                options=_opts("Testing", "Observability", "Databases", "Security"),
                minSelections=1,
                maxSelections=2,
            ),
            _q(
                "single_choice",
                "diet",
                "Dietary requirements",
                True,
                options=_opts("None", "Vegetarian", "Vegan", "Gluten free"),
            ),
            _q("phone", "phone", "Phone number", False),
        ],
    ),
    (
        "Job application: Backend engineer",
        "published",
        [
            {"type": "heading", "text": "Tell us about yourself"},
            _q("short_text", "full_name", "Full name", True, maxLength=120),
            _q("email", "email", "Email", True),
            _q("url", "portfolio", "GitHub or portfolio URL", False),
            _q(
                "number",
                "years_experience",
                "Years of professional experience",
                True,
                min=0,
                max=50,
                integer=True,
            ),
            {"type": "page_break"},
            _q(
                "single_choice",
                "start",
                "When could you start?",
                True,
                options=_opts("Immediately", "Within a month", "Within three months"),
            ),
            _q("date", "available_from", "Earliest start date", False),
            _q(
                "number",
                "salary_expectation",
                "Salary expectation",
                False,
                min=20000,
                max=400000,
                unit="EUR",
            ),
            _q("long_text", "motivation", "Why do you want to join us?", True, maxLength=5000),
        ],
    ),
    (
        "Product feedback",
        "published",
        [
            _q(
                "single_choice",
                "plan",
                "Which plan are you on?",
                True,
                options=_opts("Free", "Team", "Business", "Enterprise"),
            ),
            _q("rating", "ease", "How easy is the product to use?", True, scale=5),
            _q(
                "multiple_choice",
                "features",
                "Which features do you use?",
                True,
                options=_opts("Dashboards", "Exports", "API", "Integrations", "Alerts"),
                minSelections=1,
            ),
            _q("long_text", "missing", "What is missing?", False, maxLength=3000),
            _q(
                "number",
                "team_size",
                "How many people on your team use it?",
                False,
                min=1,
                max=100000,
                integer=True,
            ),
        ],
    ),
    (
        "Newsletter signup",
        "published",
        [
            _q("email", "email", "Email address", True),
            _q("short_text", "first_name", "First name", False, maxLength=80),
            _q(
                "multiple_choice",
                "topics",
                "Topics",
                True,
                options=_opts("Product updates", "Engineering", "Events", "Case studies"),
                minSelections=1,
            ),
        ],
    ),
    (
        "Bug report",
        "published",
        [
            _q("short_text", "summary", "Summary", True, maxLength=200),
            _q(
                "single_choice",
                "severity",
                "Severity",
                True,
                options=_opts("Low", "Medium", "High", "Critical"),
            ),
            _q(
                "single_choice",
                "platform",
                "Platform",
                True,
                options=_opts("Web", "iOS", "Android", "Desktop"),
            ),
            _q("long_text", "steps", "Steps to reproduce", True, maxLength=10000),
            _q("url", "screenshot", "Link to a screenshot", False),
            _q("email", "reporter", "Your email", False),
        ],
    ),
    (
        "Workshop interest poll",
        "draft",
        [
            _q(
                "single_choice",
                "format",
                "Preferred format",
                True,
                options=_opts("In person", "Online", "Hybrid"),
            ),
            _q("date", "preferred_date", "Preferred date", False),
        ],
    ),
    (
        "Volunteer sign-up 2025",
        "archived",
        [
            _q("short_text", "full_name", "Full name", True),
            _q("email", "email", "Email", True),
            _q(
                "multiple_choice",
                "shifts",
                "Shifts",
                True,
                options=_opts("Morning", "Afternoon", "Evening"),
            ),
            _q("number", "hours", "Hours per week", False, min=1, max=40),
        ],
    ),
]

FIRST = [
    "Ana",
    "Ben",
    "Chloé",
    "Dmitri",
    "Elif",
    "Femi",
    "Grace",
    "Hiro",
    "Ines",
    "Jonas",
    "Kofi",
    "Lena",
    "Mateo",
    "Nora",
    "Omar",
    "Priya",
    "Quentin",
    "Rosa",
    "Sven",
    "Tara",
]
LAST = [
    "Almeida",
    "Becker",
    "Chen",
    "Dubois",
    "Eriksen",
    "Fischer",
    "García",
    "Hansen",
    "Ivanova",
    "Johansson",
    "Kowalski",
    "López",
    "Müller",
    "Nakamura",
    "Okafor",
    "Patel",
]
COMPANIES = [
    "Northwind",
    "Globex",
    "Initech",
    "Umbrella Labs",
    "Hooli",
    "Stark Tools",
    "Wayne Logistics",
    "Acme Corp",
    "Vandelay Imports",
    "Soylent Foods",
]
SENTENCES = [
    "The onboarding was smooth and the docs answered most of my questions.",
    "Support replied within an hour, which made all the difference.",
    "Exports to CSV are slow for large date ranges.",
    "I would love a dark mode and keyboard shortcuts.",
    "Pricing is fair for what you get, but the jump to Business is steep.",
    "The mobile app crashes when I rotate the screen on the settings page.",
    "Please add an integration with our ticketing system.",
    "Everything works, keep it up!",
    "Search could be smarter about typos.",
    "I have been looking for a tool like this for years.",
]
SUMMARIES = [
    "Login button unresponsive",
    "Export fails for large files",
    "Typo on pricing page",
    "Chart tooltip overlaps legend",
    "Password reset email never arrives",
    "Dashboard loads slowly on Mondays",
]
