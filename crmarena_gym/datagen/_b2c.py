"""The B2C kind: Crestline Motors, a dealership selling electric and hybrid vehicles, their option packages and
accessories, protection and maintenance plans and financing to households.

PRO.md records only that Pro's B2C org is larger than the B2B one (6,796 calls against 4,033; about 54,600
records) and sells vehicles to individuals; its sizes here are ours, in that proportion. Names, products,
rules and wordings are ours.
"""

from __future__ import annotations

from crmarena_gym.datagen._pro_spec import ProductSpec, Rules, kind_spec

_P = ProductSpec

PRODUCTS: tuple[ProductSpec, ...] = (
    # Vehicles (category 0)
    _P(
        "Crestline Aero EV Sedan",
        "Vehicle",
        0,
        41000.0,
        "A four-door electric sedan with about 300 miles of range and fast charging.",
    ),
    _P(
        "Crestline Aero EV Long Range",
        "Vehicle",
        0,
        49000.0,
        "The electric sedan with a larger battery for about 360 miles between charges.",
    ),
    _P(
        "Crestline Terra Hybrid SUV",
        "Vehicle",
        0,
        38000.0,
        "A five-seat hybrid SUV that pairs a petrol engine with an electric motor for 45 mpg.",
    ),
    _P(
        "Crestline Terra Plug-in SUV",
        "Vehicle",
        0,
        46000.0,
        "The hybrid SUV with a plug-in battery that covers 40 miles of daily driving on electricity.",
    ),
    _P("Crestline Summit EV Truck", "Vehicle", 0, 62000.0, "An electric pickup truck that tows up to 10,000 pounds."),
    _P(
        "Crestline Metro EV Hatch",
        "Vehicle",
        0,
        29000.0,
        "A compact electric hatchback for city driving with 220 miles of range.",
    ),
    _P(
        "Crestline Voyager Hybrid Minivan",
        "Vehicle",
        0,
        43000.0,
        "A seven-seat hybrid minivan with sliding doors and 36 mpg.",
    ),
    _P(
        "Crestline Aero EV Performance",
        "Vehicle",
        0,
        58000.0,
        "The electric sedan with two motors, all-wheel drive and 0-60 in 3.9 seconds.",
    ),
    _P(
        "Crestline Ridge EV Crossover",
        "Vehicle",
        0,
        44000.0,
        "A mid-size electric crossover with all-wheel drive and 280 miles of range.",
    ),
    _P(
        "Crestline Metro Hybrid Compact",
        "Vehicle",
        0,
        25000.0,
        "A small hybrid car with 52 mpg for commuters on a budget.",
    ),
    _P(
        "Crestline Summit EV Truck Work Edition",
        "Vehicle",
        0,
        56000.0,
        "The electric pickup with a reinforced bed and onboard power outlets for job sites.",
    ),
    _P(
        "Crestline Terra Hybrid SUV Touring",
        "Vehicle",
        0,
        44000.0,
        "The hybrid SUV with leather seats, a larger screen and adaptive cruise control.",
    ),
    # Option packages (category 1)
    _P(
        "Technology Package",
        "Option Package",
        1,
        2800.0,
        "A larger touchscreen, a head-up display and wireless phone charging.",
    ),
    _P("Premium Sound Package", "Option Package", 1, 1900.0, "A twelve-speaker sound system with a subwoofer."),
    _P(
        "Cold Weather Package",
        "Option Package",
        1,
        1200.0,
        "Heated seats, a heated steering wheel and a battery heater for winter range.",
    ),
    _P(
        "Driver Assist Package",
        "Option Package",
        1,
        2400.0,
        "Lane centring, blind-spot monitoring and automatic emergency braking at all speeds.",
    ),
    _P("Panoramic Sunroof Package", "Option Package", 1, 1600.0, "A full-length glass roof with a power shade."),
    _P("Tow Package", "Option Package", 1, 1100.0, "Cooling and wiring upgrades that let the vehicle pull a trailer."),
    _P("Off-Road Package", "Option Package", 1, 2200.0, "All-terrain tyres, skid plates and a raised suspension."),
    _P(
        "Luxury Interior Package",
        "Option Package",
        1,
        3100.0,
        "Leather seats with ventilation, ambient lighting and wood trim.",
    ),
    _P(
        "Family Comfort Package",
        "Option Package",
        1,
        1400.0,
        "Rear sunshades, a rear entertainment screen and extra USB ports.",
    ),
    _P("Performance Wheel Package", "Option Package", 1, 2000.0, "Twenty-inch alloy wheels with performance tyres."),
    _P(
        "Fast Charging Upgrade",
        "Option Package",
        1,
        900.0,
        "Raises the vehicle's peak charging power so a top-up takes less time.",
    ),
    _P("Appearance Package", "Option Package", 1, 1300.0, "Blacked-out trim, tinted windows and a rear spoiler."),
    # Accessories (category 2)
    _P(
        "Home Wall Charger",
        "Accessory",
        2,
        650.0,
        "A wall-mounted charger that fills the battery overnight at home.",
        2,
    ),
    _P("Trailer Hitch", "Accessory", 2, 450.0, "A receiver hitch bolted to the frame for towing and bike racks.", 1),
    _P(
        "Roof Rack Cross Bars",
        "Accessory",
        2,
        380.0,
        "Bars across the roof for carrying skis, kayaks or cargo boxes.",
        2,
    ),
    _P("All-Weather Floor Mats", "Accessory", 2, 180.0, "Rubber mats that keep mud and snow off the carpet.", 4),
    _P(
        "Cargo Organizer",
        "Accessory",
        2,
        120.0,
        "A folding organizer that keeps groceries from sliding around the trunk.",
        4,
    ),
    _P("Bike Rack", "Accessory", 2, 520.0, "A hitch-mounted rack that carries up to four bicycles.", 2),
    _P(
        "Portable Charging Cable",
        "Accessory",
        2,
        300.0,
        "A cable that charges the vehicle from an ordinary household outlet.",
        2,
    ),
    _P("Dash Camera", "Accessory", 2, 240.0, "A front and rear camera that records the road while driving.", 2),
    _P("Splash Guards", "Accessory", 2, 150.0, "Mud flaps that protect the paint from gravel and spray.", 4),
    _P("Pet Barrier", "Accessory", 2, 210.0, "A barrier that keeps a dog in the cargo area.", 2),
    _P("Rooftop Cargo Box", "Accessory", 2, 780.0, "A lockable box on the roof with 16 cubic feet of space.", 1),
    _P("Child Seat Anchor Kit", "Accessory", 2, 90.0, "Extra anchors and a guide for fitting child seats safely.", 4),
    _P(
        "Paint Protection Film", "Accessory", 2, 1200.0, "A clear film that shields the front of the car from chips.", 1
    ),
    _P("Window Tint", "Accessory", 2, 350.0, "Tinted film on the side and rear windows that keeps the cabin cool.", 1),
    _P("Spare Key Fob", "Accessory", 2, 260.0, "An extra programmed key fob.", 3),
    _P("Wheel Lock Set", "Accessory", 2, 70.0, "Locking lug nuts that keep the wheels from being stolen.", 2),
    # Protection plans (category 3)
    _P(
        "Extended Warranty 5 Years",
        "Protection Plan",
        3,
        2400.0,
        "Covers repairs of the drivetrain and electronics for five years or 75,000 miles.",
    ),
    _P(
        "Extended Warranty 7 Years",
        "Protection Plan",
        3,
        3300.0,
        "Covers repairs of the drivetrain and electronics for seven years or 100,000 miles.",
    ),
    _P(
        "Tire and Wheel Protection",
        "Protection Plan",
        3,
        900.0,
        "Repairs or replaces tyres and wheels damaged by road hazards.",
    ),
    _P(
        "Battery Protection Plan",
        "Protection Plan",
        3,
        1800.0,
        "Replaces the high-voltage battery if its capacity falls below 75% within eight years.",
    ),
    _P(
        "Gap Coverage",
        "Protection Plan",
        3,
        700.0,
        "Pays the difference between the loan balance and the car's value after a total loss.",
    ),
    _P(
        "Appearance Protection",
        "Protection Plan",
        3,
        600.0,
        "Repairs dents, scratches and interior stains for three years.",
    ),
    # Maintenance plans (category 4)
    _P(
        "Maintenance Plan 3 Years",
        "Maintenance Plan",
        4,
        1100.0,
        "Scheduled service, inspections and fluid changes for three years.",
    ),
    _P(
        "Maintenance Plan 5 Years",
        "Maintenance Plan",
        4,
        1700.0,
        "Scheduled service, inspections and fluid changes for five years.",
    ),
    _P(
        "EV Care Plan",
        "Maintenance Plan",
        4,
        900.0,
        "Battery health checks, cabin filters and brake service for electric vehicles.",
    ),
    _P(
        "Tire Rotation Plan",
        "Maintenance Plan",
        4,
        400.0,
        "Tyre rotations and alignment checks every 7,500 miles for four years.",
    ),
    _P(
        "Roadside Assistance Plus",
        "Maintenance Plan",
        4,
        350.0,
        "Towing, jump starts and mobile charging for five years.",
    ),
    _P("Detailing Plan", "Maintenance Plan", 4, 500.0, "Four full interior and exterior details a year for two years."),
    # Financing (category 5)
    _P("Auto Loan Setup 36 Months", "Financing", 5, 295.0, "Sets up a 36-month loan through our lending partners."),
    _P("Auto Loan Setup 60 Months", "Financing", 5, 295.0, "Sets up a 60-month loan through our lending partners."),
    _P("Auto Loan Setup 72 Months", "Financing", 5, 295.0, "Sets up a 72-month loan through our lending partners."),
    _P("Lease Setup 36 Months", "Financing", 5, 495.0, "Sets up a 36-month lease with 12,000 miles a year."),
    _P("Lease Setup 24 Months", "Financing", 5, 495.0, "Sets up a 24-month lease with 10,000 miles a year."),
    _P(
        "Trade-In Processing",
        "Financing",
        5,
        199.0,
        "Appraises the customer's old vehicle and applies its value to the purchase.",
    ),
)

CATEGORIES = (
    "New Vehicles",
    "Factory Options",
    "Accessories",
    "Protection",
    "Service and Maintenance",
    "Financing and Leasing",
    "Electric Vehicles",
    "Family Vehicles",
)

RULES = Rules(
    quantity_tiers=(),
    family_caps={"Vehicle": 4.0, "Option Package": 8.0, "Accessory": 12.0},
    offer_bonus=4.0,
    discount_limit=2500.0,
    no_discount_families=("Protection Plan", "Maintenance Plan", "Financing"),
    quantity_limits={24: 2, 25: 1, 34: 1, 36: 1, 38: 3},
    exclusions=((16, 34), (18, 21), (40, 41), (52, 55)),
    bundles={25: (17,), 29: (25,), 13: (12,), 22: (24,), 43: (48,)},
)

ISSUES: tuple[tuple[str, str], ...] = (
    ("Warning Light On", "A dashboard warning light came on and the owner wants to know if it is safe to drive."),
    ("Battery Range Concern", "The electric range is lower than the owner expected or than it used to be."),
    ("Charging Problem", "The vehicle will not charge, or charges slowly, at home or at public chargers."),
    ("Infotainment Glitch", "The touchscreen, navigation or phone connection freezes or misbehaves."),
    ("Delivery Delay", "A purchased vehicle has not been delivered on the promised date."),
    ("Paint or Body Damage", "The vehicle arrived with scratches, dents or paint defects."),
    ("Financing Paperwork Error", "The loan or lease documents show wrong terms, names or amounts."),
    ("Registration Delay", "The plates or registration from the state have not arrived."),
    ("Recall Question", "The owner asks whether a recall applies to the vehicle and how to get it fixed."),
    ("Tire Wear", "Tyres wear faster than expected or unevenly."),
    ("Brake Noise", "The brakes squeal, grind or feel different from usual."),
    ("Accessory Fit Problem", "A purchased accessory does not fit the vehicle or was installed badly."),
    ("Warranty Claim", "The owner asks for a repair under the factory or extended warranty."),
    ("Billing Discrepancy", "The invoice or a plan's charges do not match the purchase agreement."),
    ("Trade-In Valuation Dispute", "The owner disputes the value credited for the vehicle they traded in."),
)

STAGE_TASKS: tuple[tuple[str, ...], ...] = (
    (
        "Confirm buyer's budget range",
        "Ask about a trade-in vehicle",
        "Check driver's licence on file",
        "Schedule showroom visit",
        "Note preferred body style",
        "Pre-qualify for financing",
    ),
    (
        "Book test drive",
        "Walk through trim levels",
        "Compare range and efficiency",
        "Appraise trade-in vehicle",
        "Review home charging options",
        "Identify who else decides",
    ),
    (
        "Prepare vehicle price quote",
        "Add selected option packages",
        "Check discount eligibility",
        "Send quote for manager review",
        "Include protection plan pricing",
        "Verify option compatibility",
    ),
    (
        "Negotiate trade-in allowance",
        "Discuss financing terms",
        "Respond to competing dealer offer",
        "Finalize out-the-door price",
        "Confirm delivery date",
        "Review purchase agreement with buyer",
    ),
    (
        "Collect signed purchase agreement",
        "Schedule vehicle delivery",
        "Register vehicle with the state",
        "Hand over keys and walkthrough",
        "Enroll buyer in maintenance plan",
        "Send thank-you note",
    ),
)

TITLES = (
    "Teacher",
    "Nurse",
    "Software Developer",
    "Small Business Owner",
    "Accountant",
    "Electrician",
    "Graduate Student",
    "Retired",
    "Marketing Manager",
    "Physician",
)

COMPETITORS = (
    "Voltway Auto",
    "Greenmile Motors",
    "Summitline Cars",
    "Horizon Auto Group",
    "Pacewell EV",
    "Roadstar Dealers",
)

SPEC = kind_spec(
    "b2c",
    globals(),
    company="Crestline Motors",
    domain="crestline-motors.example.com",
    counts={
        "Account": 1100,
        "Contact": 0,
        "Lead": 4000,
        "Opportunity": 2600,
        "Case": 520,
        "LiveChatTranscript": 260,
        "Event": 180,
        "PurchaseCluster": 120,  # look-alike purchases planted for named_entity_disambiguation (not an object)
    },
    households=True,
    contacts_per_account=0.0,
    lead_company_share=0.08,
    lines_per_opportunity=(3, 7),
    account_words=((), ()),
    setup_days={
        "Vehicle": 21,
        "Option Package": 14,
        "Accessory": 3,
        "Protection Plan": 1,
        "Maintenance Plan": 1,
        "Financing": 2,
    },
    setup_bands=(),
    model_days={0: 10, 1: 24, 2: 7, 3: 18, 4: 45, 5: 5, 6: 14, 7: 35, 8: 21, 9: 4, 10: 40, 11: 12},
    bant_families=("Vehicle",),
    subtopics=(
        "Price",
        "Range",
        "Comfort",
        "Safety",
        "Financing",
        "Trade-In Value",
        "Charging",
        "Warranty",
        "Delivery Time",
        "Technology",
    ),
)
