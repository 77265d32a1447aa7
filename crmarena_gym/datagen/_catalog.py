"""The store's catalog: 12 categories, 501 products with names, attributes and prices.

Product names follow the patterns a sportswear shop uses ("Women's Trail Running Shorts",
"Summit Hiking Backpack", "Lightweight Swim Goggles"); every product also carries the attributes a
customer would use to describe it vaguely (audience, sport, type, material, colour), which task
generators read from the latent table to phrase named-entity-disambiguation questions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

N_PRODUCTS = 501
N_CATEGORY_LINKS = 762  # ProductCategoryProduct rows: every product once, some twice

AUDIENCE_LABEL = {"men": "Men's", "women": "Women's", "kids": "Kids'"}


@dataclass(frozen=True)
class ProductType:
    """A kind of product within a category."""

    noun: str  # "Trail Running Shoes"
    sport: str  # "trail running"
    use: str  # "rocky and muddy trails"
    audiences: tuple[str, ...]  # who it is cut for; "unisex" means no audience in the name
    price: tuple[float, float]  # list price range in dollars


@dataclass(frozen=True)
class Category:
    """A catalog category."""

    name: str
    code: str
    types: tuple[ProductType, ...]
    materials: tuple[str, ...]
    lines: tuple[str, ...]  # product-line names used as name prefixes
    related: tuple[int, ...]  # indexes of categories a product may also be listed under


_MW = ("men", "women")
_MWK = ("men", "women", "kids")
_U = ("unisex",)


def _t(noun: str, sport: str, use: str, audiences: tuple[str, ...], lo: float, hi: float) -> ProductType:
    return ProductType(noun, sport, use, audiences, (lo, hi))


CATEGORIES: tuple[Category, ...] = (
    Category(
        "Running Footwear",
        "RUN",
        (
            _t("Running Shoes", "running", "daily road miles", _MWK, 70, 160),
            _t("Trail Running Shoes", "trail running", "rocky and muddy trails", _MW, 90, 170),
            _t("Racing Flats", "racing", "race-day speed", _MW, 100, 220),
            _t("Marathon Shoes", "marathon running", "long-distance races", _MW, 120, 250),
            _t("Sprint Spikes", "sprinting", "the track", _MWK, 60, 140),
            _t("Recovery Slides", "recovery", "post-run recovery", _U, 25, 60),
            _t("Stability Running Shoes", "running", "runners who overpronate", _MW, 90, 170),
        ),
        ("engineered mesh", "knit upper", "recycled mesh", "synthetic overlay"),
        ("Velocity", "Stride", "Tempo", "Pacer", "Swift", "Cadence", "Longhaul"),
        (3, 4, 6),
    ),
    Category(
        "Lifestyle Sneakers",
        "SNK",
        (
            _t("Court Sneakers", "casual wear", "everyday streetwear", _MWK, 55, 120),
            _t("High-Top Sneakers", "casual wear", "street style", _MW, 65, 140),
            _t("Slip-On Sneakers", "casual wear", "easy on-and-off comfort", _MWK, 45, 95),
            _t("Retro Sneakers", "casual wear", "a vintage look", _U, 70, 150),
            _t("Canvas Sneakers", "casual wear", "warm-weather outings", _U, 40, 80),
            _t("Walking Shoes", "walking", "all-day walking", _MW, 60, 130),
        ),
        ("leather", "canvas", "suede", "recycled knit"),
        ("Metro", "Classic", "Heritage", "Urban", "Street", "Everyday"),
        (0, 3, 4),
    ),
    Category(
        "Women's Activewear",
        "WAW",
        (
            _t("Running Shorts", "running", "warm-weather runs", ("women",), 25, 55),
            _t("Sports Bra", "training", "high-impact workouts", ("women",), 30, 70),
            _t("Training Leggings", "training", "gym sessions", ("women",), 45, 95),
            _t("Tennis Skort", "tennis", "match play", ("women",), 35, 70),
            _t("Running Tank", "running", "hot-weather training", ("women",), 20, 45),
            _t("Quarter-Zip Top", "running", "cool mornings", ("women",), 45, 90),
            _t("Compression Tights", "running", "muscle support on long runs", ("women",), 50, 110),
        ),
        ("polyester-spandex blend", "recycled nylon", "merino blend", "brushed jersey"),
        ("Aura", "Flex", "Motion", "Lumen", "Kinetic", "Breeze"),
        (6, 4),
    ),
    Category(
        "Men's Activewear",
        "MAW",
        (
            _t("Training Shorts", "training", "gym sessions", ("men",), 25, 55),
            _t("Performance Tee", "training", "hard workouts", ("men",), 20, 45),
            _t("Running Jacket", "running", "wind and light rain", ("men",), 70, 150),
            _t("Compression Shirt", "training", "muscle support", ("men",), 30, 65),
            _t("Track Pants", "training", "warm-ups", ("men",), 45, 90),
            _t("Basketball Shorts", "basketball", "pickup games", ("men",), 25, 50),
        ),
        ("polyester mesh", "recycled polyester", "cotton blend", "stretch nylon"),
        ("Titan", "Drive", "Core", "Forge", "Vector", "Ridge"),
        (4, 9),
    ),
    Category(
        "Outdoor Apparel",
        "OAP",
        (
            _t("Rain Jacket", "hiking", "wet-weather hikes", _MWK, 80, 200),
            _t("Fleece Pullover", "hiking", "chilly evenings at camp", _MWK, 45, 110),
            _t("Insulated Parka", "winter hiking", "sub-freezing days", _MW, 150, 320),
            _t("Softshell Pants", "hiking", "scrambling and long treks", _MW, 70, 140),
            _t("Base Layer Top", "winter sports", "layering in the cold", _MW, 35, 80),
            _t("Trail Running Vest", "trail running", "carrying water on the trail", _U, 60, 130),
            _t("Windbreaker", "hiking", "gusty ridgelines", _MWK, 50, 110),
        ),
        ("waterproof nylon", "recycled fleece", "ripstop polyester", "merino wool", "down fill"),
        ("Summit", "Alpine", "Cascade", "Tundra", "Ridgeline", "Northbound", "Glacier"),
        (5, 2, 3),
    ),
    Category(
        "Hiking & Camping Gear",
        "HIK",
        (
            _t("Hiking Backpack", "hiking", "multi-day treks", _U, 60, 220),
            _t("Hiking Boots", "hiking", "rough terrain", _MW, 100, 230),
            _t("Trekking Poles", "hiking", "steep climbs and descents", _U, 40, 120),
            _t("Hydration Pack", "trail running", "hands-free drinking", _U, 45, 110),
            _t("Camping Headlamp", "camping", "night hikes and camp chores", _U, 20, 60),
            _t("Sleeping Bag", "camping", "three-season camping", _U, 80, 260),
            _t("Trail Gaiters", "hiking", "keeping debris out of boots", _U, 20, 50),
        ),
        ("ripstop nylon", "aluminum", "carbon fiber", "waterproof leather", "recycled polyester"),
        ("Summit", "Trailblazer", "Basecamp", "Pathfinder", "Wildland", "Switchback"),
        (4,),
    ),
    Category(
        "Yoga & Studio",
        "YOG",
        (
            _t("Yoga Mat", "yoga", "studio and home practice", _U, 30, 120),
            _t("Yoga Blocks", "yoga", "deepening poses safely", _U, 15, 40),
            _t("Yoga Leggings", "yoga", "flowing practice", ("women",), 45, 100),
            _t("Meditation Cushion", "meditation", "seated meditation", _U, 30, 80),
            _t("Yoga Strap", "yoga", "stretching and alignment", _U, 10, 25),
            _t("Pilates Ring", "pilates", "core strengthening", _U, 20, 45),
            _t("Studio Hoodie", "yoga", "warming up before class", _MW, 50, 100),
        ),
        ("natural rubber", "cork", "TPE foam", "organic cotton", "recycled polyester"),
        ("Zen", "Lotus", "Balance", "Serene", "Harmony", "Namaste"),
        (2, 11),
    ),
    Category(
        "Swim",
        "SWM",
        (
            _t("Swim Goggles", "swimming", "pool laps", _MWK, 15, 50),
            _t("Swim Cap", "swimming", "keeping hair dry in the pool", _U, 10, 30),
            _t("Swim Fins", "swimming", "kick training", _U, 25, 70),
            _t("Training Swimsuit", "swimming", "daily pool training", _MWK, 35, 90),
            _t("Kickboard", "swimming", "leg-focused drills", _U, 15, 35),
            _t("Open Water Wetsuit", "triathlon", "cold open-water swims", _MW, 180, 450),
        ),
        ("silicone", "chlorine-resistant polyester", "neoprene", "EVA foam"),
        ("Aqua", "Wave", "Current", "Tidal", "Riptide", "Lagoon"),
        (11,),
    ),
    Category(
        "Cycling",
        "CYC",
        (
            _t("Cycling Jersey", "cycling", "long road rides", _MW, 50, 120),
            _t("Bib Shorts", "cycling", "hours in the saddle", _MW, 70, 180),
            _t("Cycling Helmet", "cycling", "road and commuter riding", _MWK, 60, 220),
            _t("Cycling Gloves", "cycling", "grip and comfort on the bars", _U, 20, 50),
            _t("Bike Lights Set", "cycling", "riding after dark", _U, 25, 80),
            _t("Cycling Shoes", "cycling", "clipless pedals", _MW, 90, 250),
        ),
        ("lycra", "polycarbonate shell", "padded chamois", "aluminum"),
        ("Velo", "Peloton", "Crankset", "Breakaway", "Sprint", "Gran Fondo"),
        (11, 3),
    ),
    Category(
        "Team Sports",
        "TEA",
        (
            _t("Soccer Cleats", "soccer", "firm-ground pitches", _MWK, 60, 220),
            _t("Soccer Ball", "soccer", "training and matches", _U, 20, 60),
            _t("Basketball Shoes", "basketball", "indoor courts", _MWK, 80, 190),
            _t("Basketball", "basketball", "indoor and outdoor play", _U, 25, 70),
            _t("Shin Guards", "soccer", "protection in tackles", _MWK, 15, 40),
            _t("Volleyball Knee Pads", "volleyball", "diving digs", _U, 20, 45),
            _t("Baseball Glove", "baseball", "fielding", _MWK, 40, 180),
        ),
        ("synthetic leather", "composite leather", "TPU", "foam padding"),
        ("Striker", "Playmaker", "Rally", "Champion", "Fastbreak", "Varsity"),
        (3, 1),
    ),
    Category(
        "Golf",
        "GLF",
        (
            _t("Golf Shoes", "golf", "eighteen holes in any weather", _MW, 90, 200),
            _t("Golf Polo", "golf", "warm days on the course", _MW, 40, 85),
            _t("Golf Glove", "golf", "a steady grip", _MW, 15, 35),
            _t("Golf Putter", "golf", "precise putting", _U, 90, 300),
            _t("Golf Stand Bag", "golf", "walking the course", _U, 120, 280),
            _t("Golf Skort", "golf", "a full round in comfort", ("women",), 45, 90),
        ),
        ("waterproof leather", "cabretta leather", "stretch polyester", "milled steel"),
        ("Fairway", "Eagle", "Links", "Greenside", "Birdie", "Clubhouse"),
        (2, 3),
    ),
    Category(
        "Fitness Equipment & Trackers",
        "FIT",
        (
            _t("Fitness Tracker", "fitness", "tracking steps, sleep and heart rate", _U, 50, 200),
            _t("Jump Rope", "conditioning", "high-intensity intervals", _U, 10, 40),
            _t("Resistance Bands Set", "strength training", "home workouts", _U, 15, 45),
            _t("Adjustable Dumbbells", "strength training", "home strength work", _U, 120, 400),
            _t("Foam Roller", "recovery", "loosening tight muscles", _U, 20, 50),
            _t("Agility Ladder", "speed training", "footwork drills", _U, 20, 45),
            _t("GPS Running Watch", "running", "pace and distance tracking", _U, 150, 450),
        ),
        ("steel", "natural latex", "high-density foam", "silicone strap", "nylon webbing"),
        ("Pulse", "Apex", "Ironclad", "Momentum", "Vital", "Kinetix"),
        (6, 0),
    ),
)

ADJECTIVES: tuple[str, ...] = (
    "Lightweight",
    "Pro",
    "Elite",
    "All-Weather",
    "Performance",
    "Ultralight",
    "Essential",
    "Premium",
    "Breathable",
    "Everyday",
)

COLOURS: tuple[str, ...] = (
    "black",
    "white",
    "navy",
    "charcoal grey",
    "forest green",
    "coral",
    "royal blue",
    "crimson",
    "sand",
    "olive",
    "teal",
    "lavender",
    "bright orange",
    "slate",
)

FEATURES: tuple[str, ...] = (
    "moisture-wicking",
    "quick-drying",
    "durable",
    "reinforced",
    "breathable",
    "cushioned",
    "water-resistant",
    "ergonomic",
    "adjustable",
    "reflective",
)


@dataclass(frozen=True)
class Product:
    """One catalog product and the attributes that describe it."""

    name: str
    category: int
    second_category: int | None
    type: ProductType
    audience: str
    line: str | None
    adjective: str | None
    material: str
    colour: str
    feature: str
    list_price: float
    active: bool
    external_id: str

    @property
    def description(self) -> str:
        """The marketing description stored in Product2.Description."""
        noun = self.type.noun.lower()
        return (
            f"{self.feature.capitalize()} {noun} made of {self.material} in {self.colour}, built for {self.type.use}."
        )

    def attributes(self) -> dict[str, str | None]:
        """Attributes a customer might use to describe the product."""
        return {
            "name": self.name,
            "category": CATEGORIES[self.category].name,
            "second_category": None if self.second_category is None else CATEGORIES[self.second_category].name,
            "type": self.type.noun,
            "sport": self.type.sport,
            "use": self.type.use,
            "audience": self.audience,
            "line": self.line,
            "adjective": self.adjective,
            "material": self.material,
            "colour": self.colour,
            "feature": self.feature,
        }


def _name_candidates(cat: Category) -> list[tuple[str, ProductType, str, str | None, str | None]]:
    """Every name the category can produce: (name, type, audience, line, adjective)."""
    out = []
    for ptype in cat.types:
        audiences = [a for a in ptype.audiences if a != "unisex"]
        for aud in audiences:
            out.append((f"{AUDIENCE_LABEL[aud]} {ptype.noun}", ptype, aud, None, None))
            for adj in ADJECTIVES[:4]:
                out.append((f"{AUDIENCE_LABEL[aud]} {adj} {ptype.noun}", ptype, aud, None, adj))
        default_aud = audiences[0] if len(audiences) == 1 else "unisex"
        for line in cat.lines:
            out.append((f"{line} {ptype.noun}", ptype, default_aud, line, None))
        for adj in ADJECTIVES:
            out.append((f"{adj} {ptype.noun}", ptype, default_aud, None, adj))
        for line in cat.lines[:3]:
            for adj in ADJECTIVES[:3]:
                out.append((f"{line} {adj} {ptype.noun}", ptype, default_aud, line, adj))
    seen: set[str] = set()
    unique = []
    for cand in out:  # a line name can equal an adjective ("Everyday"): keep the first reading
        if cand[0] not in seen:
            seen.add(cand[0])
            unique.append(cand)
    return unique


def build_catalog(rng: np.random.Generator) -> list[Product]:
    """Draw the 501 products: names unique across the store, spread over the 12 categories.

    Example:
        >>> products = build_catalog(np.random.default_rng(0))
        >>> len(products), len({p.name for p in products})
        (501, 501)
    """
    per_cat = np.full(len(CATEGORIES), N_PRODUCTS // len(CATEGORIES))
    per_cat[: N_PRODUCTS - int(per_cat.sum())] += 1
    used: set[str] = set()
    products: list[Product] = []
    for ci, cat in enumerate(CATEGORIES):
        cands = [c for c in _name_candidates(cat) if c[0] not in used]
        order = rng.permutation(len(cands))
        # Spread the category's products over its types first, then fill at random.
        chosen: list[int] = []
        by_type: dict[str, list[int]] = {}
        for idx in order.tolist():
            by_type.setdefault(cands[idx][1].noun, []).append(idx)
        type_names = [t.noun for t in cat.types]
        while len(chosen) < per_cat[ci]:
            progressed = False
            for tn in type_names:
                if by_type.get(tn) and len(chosen) < per_cat[ci]:
                    chosen.append(by_type[tn].pop(0))
                    progressed = True
            if not progressed:
                raise RuntimeError(f"category {cat.name!r} cannot name {per_cat[ci]} distinct products")
        for k, idx in enumerate(chosen):
            name, ptype, aud, line, adj = cands[idx]
            used.add(name)
            lo, hi = ptype.price
            price = float(np.round(lo + (hi - lo) * rng.random())) - 0.01
            products.append(
                Product(
                    name=name,
                    category=ci,
                    second_category=None,
                    type=ptype,
                    audience=aud,
                    line=line,
                    adjective=adj,
                    material=cat.materials[int(rng.integers(len(cat.materials)))],
                    colour=COLOURS[int(rng.integers(len(COLOURS)))],
                    feature=FEATURES[int(rng.integers(len(FEATURES)))],
                    list_price=round(price, 2),
                    active=True,
                    external_id=f"NPA-{cat.code}-{k + 1:04d}",
                )
            )
    # Some products are listed under a second, related category.
    n_second = N_CATEGORY_LINKS - N_PRODUCTS
    pick = np.sort(rng.choice(len(products), size=n_second, replace=False))
    for i in pick.tolist():
        p = products[i]
        related = CATEGORIES[p.category].related
        second = related[int(rng.integers(len(related)))]
        products[i] = _replace(p, second_category=second)
    # A few discontinued products: still priced in the standard book, never ordered.
    for i in np.sort(rng.choice(len(products), size=22, replace=False)).tolist():
        products[i] = _replace(products[i], active=False)
    return products


def _replace(p: Product, **changes: object) -> Product:
    from dataclasses import replace

    return replace(p, **changes)  # type: ignore[arg-type]
